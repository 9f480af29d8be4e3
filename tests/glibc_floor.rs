//! The release binary built for the glibc floor (`scripts/build-floor.sh` →
//! `target/floor/netcheck`) starts on any glibc from 2.28 on: its ELF version needs
//! (`.gnu.version_r`) name no newer `GLIBC_x.y`, and it links no CUDA, NCCL or libfabric (those
//! are loaded at run time from the image).
//!
//! The binary is `NETCHECK_FLOOR_BINARY`, else `target/floor/netcheck`. Without it these
//! tests print `skipping: …`, except under `CI=true` (`.ci/run` builds it first), where a
//! missing binary fails them.

use std::path::{Path, PathBuf};

use object::read::elf::{Dyn, FileHeader, SectionHeader};

/// The newest glibc the floor binary may need.
const FLOOR: (u32, u32) = (2, 28);

/// The libraries the binary may link: glibc's own and libgcc_s (unwinding), present on every
/// glibc system.
const ALLOWED_NEEDED: &[&str] = &[
    "libc.so.6",
    "libm.so.6",
    "libdl.so.2",
    "libpthread.so.0",
    "librt.so.1",
    "libutil.so.1",
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
    "libgcc_s.so.1",
];

fn floor_binary() -> Option<PathBuf> {
    let path = std::env::var_os("NETCHECK_FLOOR_BINARY")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/floor/netcheck"));
    if path.is_file() {
        return Some(path);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "CI=true but the glibc-floor binary {} is missing; build it with scripts/build-floor.sh (or set NETCHECK_FLOOR_BINARY)",
            path.display()
        );
    }
    eprintln!(
        "skipping: no glibc-floor binary at {} (build it with scripts/build-floor.sh, or set NETCHECK_FLOOR_BINARY)",
        path.display()
    );
    None
}

/// Every (library, version) pair in the ELF file's `.gnu.version_r`, and its DT_NEEDED list.
fn version_needs(path: &Path) -> (Vec<(String, String)>, Vec<String>) {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let data = &data[..];
    let header = object::elf::FileHeader64::<object::Endianness>::parse(data)
        .unwrap_or_else(|e| panic!("{}: not a 64-bit ELF file: {e}", path.display()));
    let endian = header.endian().expect("valid ELF endianness");
    let sections = header.sections(endian, data).expect("section table");
    let mut needs = vec![];
    if let Some((mut verneed, link)) = sections.gnu_verneed(endian, data).expect("verneed") {
        let strings = sections
            .strings(endian, data, link)
            .expect("verneed strings");
        while let Some((need, mut aux)) = verneed.next().expect("verneed entry") {
            let file = String::from_utf8_lossy(need.file(endian, strings).expect("vn_file"));
            while let Some(a) = aux.next().expect("vernaux entry") {
                let name = String::from_utf8_lossy(a.name(endian, strings).expect("vna_name"));
                needs.push((file.to_string(), name.to_string()));
            }
        }
    }
    let mut needed = vec![];
    for section in sections.iter() {
        if let Some((dyns, link)) = section.dynamic(endian, data).expect("dynamic section") {
            let strings = sections
                .strings(endian, data, link)
                .expect("dynamic strings");
            for d in dyns {
                if d.tag32(endian) == Some(object::elf::DT_NEEDED as i32) {
                    let name = d.string(endian, strings).expect("DT_NEEDED name");
                    needed.push(String::from_utf8_lossy(name).into_owned());
                }
            }
        }
    }
    (needs, needed)
}

/// `GLIBC_2.28` → (2, 28); other version names (GLIBC_PRIVATE, GCC_3.0) → None.
fn glibc_version(name: &str) -> Option<(u32, u32)> {
    let v = name.strip_prefix("GLIBC_")?;
    let mut parts = v.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().unwrap_or("0").parse().ok()?;
    Some((major, minor))
}

/// The newest glibc version needed, or the needs above `floor`.
fn judge(needs: &[(String, String)], floor: (u32, u32)) -> Result<(u32, u32), Vec<String>> {
    let above: Vec<String> = needs
        .iter()
        .filter(|(_, v)| glibc_version(v).is_some_and(|g| g > floor))
        .map(|(f, v)| format!("{v} (from {f})"))
        .collect();
    if !above.is_empty() {
        return Err(above);
    }
    needs
        .iter()
        .filter_map(|(_, v)| glibc_version(v))
        .max()
        .ok_or_else(|| vec!["no GLIBC_ version needs at all".into()])
}

#[test]
fn the_floor_binary_needs_no_glibc_newer_than_the_floor_and_links_no_gpu_stack() {
    let Some(bin) = floor_binary() else { return };
    let (needs, needed) = version_needs(&bin);
    match judge(&needs, FLOOR) {
        Ok((a, b)) => eprintln!(
            "{}: newest glibc version needed: GLIBC_{a}.{b} (floor {}.{})",
            bin.display(),
            FLOOR.0,
            FLOOR.1
        ),
        Err(above) => panic!(
            "{} needs glibc newer than {}.{}: {}",
            bin.display(),
            FLOOR.0,
            FLOOR.1,
            above.join(", ")
        ),
    }
    let unexpected: Vec<&String> = needed
        .iter()
        .filter(|n| !ALLOWED_NEEDED.contains(&n.as_str()))
        .collect();
    assert!(
        unexpected.is_empty(),
        "{} links {unexpected:?} at build time; only glibc is allowed (CUDA, NCCL and libfabric are loaded at run time)",
        bin.display()
    );
}

#[test]
fn the_floor_binary_starts_here() {
    let Some(bin) = floor_binary() else { return };
    let out = std::process::Command::new(&bin)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("netcheck "),
        "{out:?}"
    );
}

#[test]
fn the_reader_finds_the_glibc_needs_of_a_normal_build_and_the_judge_rejects_newer_ones() {
    // This test binary is an ordinary build: it needs glibc symbols, so a reader that found
    // none would be broken.
    let me = std::env::current_exe().unwrap();
    let (needs, needed) = version_needs(&me);
    assert!(
        needs
            .iter()
            .any(|(f, v)| f == "libc.so.6" && v.starts_with("GLIBC_2.")),
        "{needs:?}"
    );
    assert!(needed.iter().any(|n| n == "libc.so.6"), "{needed:?}");
    let need = |v: &str| ("libc.so.6".to_string(), v.to_string());
    assert_eq!(
        judge(
            &[
                need("GLIBC_2.2.5"),
                need("GLIBC_2.28"),
                need("GLIBC_PRIVATE")
            ],
            FLOOR
        ),
        Ok((2, 28))
    );
    let err = judge(&[need("GLIBC_2.17"), need("GLIBC_2.34")], FLOOR).unwrap_err();
    assert_eq!(err, ["GLIBC_2.34 (from libc.so.6)"]);
    assert!(judge(&[], FLOOR).is_err());
    assert_eq!(glibc_version("GLIBC_2.3.4"), Some((2, 3)));
    assert_eq!(glibc_version("GCC_3.0"), None);
}
