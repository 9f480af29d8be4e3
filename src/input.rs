//! Reading an input named on the command line: a file, or stdin for `-`. Every command reads
//! its files through [`read_to_string`], so `-` means stdin everywhere (`gate -`, `report -`,
//! `--baseline -`, `--config -`); stdin can be read once, so [`at_most_one_stdin`] refuses
//! `-` for two inputs of one command.

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};
use crate::output::is_stdio;

/// How an input read from stdin is named in messages and reports.
pub const STDIN_NAME: &str = "<stdin>";

/// The name an input goes by in messages: the path, or `<stdin>` for `-`.
pub fn origin(path: &Path) -> String {
    if is_stdio(path) {
        STDIN_NAME.into()
    } else {
        path.display().to_string()
    }
}

/// Reads a file, or stdin for `-`, as UTF-8 text.
pub fn read_to_string(path: &Path) -> Result<String> {
    if is_stdio(path) {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Error::read(STDIN_NAME, e))?;
        Ok(text)
    } else {
        std::fs::read_to_string(path).map_err(|e| Error::read(path, e))
    }
}

/// Refuses `-` for more than one input: `inputs` are the flag (or argument) names and paths.
pub fn at_most_one_stdin<'a>(
    inputs: impl IntoIterator<Item = (&'a str, Option<&'a Path>)>,
) -> Result<()> {
    let on_stdin: Vec<&str> = inputs
        .into_iter()
        .filter(|(_, p)| p.is_some_and(is_stdio))
        .map(|(name, _)| name)
        .collect();
    if on_stdin.len() > 1 {
        let who = match on_stdin.as_slice() {
            [a, rest @ ..] if rest.iter().all(|b| b == a) => {
                format!("{a} is `-` {} times:", on_stdin.len())
            }
            [a, b] => format!("{a} and {b} both read stdin (`-`);"),
            all => format!("{} all read stdin (`-`);", all.join(", ")),
        };
        return Err(Error::Usage {
            message: format!("{who} stdin can be read only once"),
            hint: Some("save all but one of them to a file first".into()),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_inputs_on_stdin_are_refused() {
        let dash = Path::new("-");
        assert!(at_most_one_stdin([("RESULTS", Some(dash)), ("--baseline", None)]).is_ok());
        let e =
            at_most_one_stdin([("RESULTS", Some(dash)), ("--baseline", Some(dash))]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "RESULTS and --baseline both read stdin (`-`); stdin can be read only once"
        );
        assert_eq!(e.exit_code(), crate::exit::BAD_INPUT);
        let e = at_most_one_stdin([("FILE", Some(dash)), ("FILE", Some(dash))]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "FILE is `-` 2 times: stdin can be read only once"
        );
        let e = at_most_one_stdin([
            ("RESULTS", Some(dash)),
            ("--baseline", Some(dash)),
            ("--config", Some(dash)),
        ])
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("RESULTS, --baseline, --config all read"),
            "{e}"
        );
    }

    #[test]
    fn stdin_is_named_stdin() {
        assert_eq!(origin(Path::new("-")), "<stdin>");
        assert_eq!(origin(Path::new("a/b.json")), "a/b.json");
    }
}
