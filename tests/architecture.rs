//! ARCHITECTURE.md stays true: its rooms are exactly the top-level modules of `src/`, and each
//! room's `crate::…` uses stay inside the room's "may import" list.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// room → its "may import" list, from the table of ARCHITECTURE.md.
fn documented() -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let names = |cell: &str| -> BTreeSet<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    text.lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            let room = cells[0]
                .trim_start_matches("| ")
                .trim_matches('`')
                .to_string();
            let may = names(cells.last().unwrap().trim_end_matches(" |"));
            (room, may)
        })
        .collect()
}

/// The top-level modules of `src/` (files and folders; not lib.rs and main.rs).
fn modules() -> BTreeSet<String> {
    std::fs::read_dir(root().join("src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = p.file_stem()?.to_string_lossy().to_string();
            let is_rs = p.extension().is_some_and(|x| x == "rs");
            (p.is_dir() || is_rs && name != "lib" && name != "main").then_some(name)
        })
        .collect()
}

fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for e in std::fs::read_dir(path).unwrap() {
            rust_files(&e.unwrap().path(), out);
        }
    } else if path.extension().is_some_and(|x| x == "rs") {
        out.push(path.to_path_buf());
    }
}

/// The rooms a room's code names as `crate::room` (`crate::say!` is output's macro).
fn uses(room: &str, rooms: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut files = vec![];
    let dir = root().join("src").join(room);
    rust_files(
        &if dir.is_dir() {
            dir
        } else {
            root().join(format!("src/{room}.rs"))
        },
        &mut files,
    );
    let mut found = BTreeMap::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices("crate::") {
                let rest = &line[at + "crate::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let name = if name == "say" { "output".into() } else { name };
                if name != room && rooms.contains(&name) {
                    found
                        .entry(name)
                        .or_insert_with(|| format!("{}:{}", f.display(), i + 1));
                }
            }
        }
    }
    found
}

#[test]
fn the_rooms_are_the_modules_of_src() {
    let documented: BTreeSet<String> = documented().into_keys().collect();
    assert_eq!(
        documented,
        modules(),
        "ARCHITECTURE.md's rooms against src/"
    );
}

#[test]
fn every_room_imports_only_what_the_map_allows() {
    let map = documented();
    let rooms: BTreeSet<String> = map.keys().cloned().collect();
    let mut wrong = vec![];
    for (room, may) in &map {
        for (used, at) in uses(room, &rooms) {
            if !may.contains(&used) {
                wrong.push(format!(
                    "{room} uses {used} ({at}), which ARCHITECTURE.md does not allow"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_map_reader_sees_the_rules() {
    // The checks above cannot pass by reading nothing.
    let map = documented();
    assert!(map.len() >= 15, "{map:?}");
    assert!(map["logscan"].contains("error") && !map["logscan"].contains("launch"));
    assert!(map["exit"].is_empty());
}
