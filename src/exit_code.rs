//! The process exit codes: `docs/cli.md`'s one table for every command
//! ([`ExitCode`]), and the order in which they decide when several apply
//! ([`ExitCode::PRECEDENCE`]). Every error type maps to it, and the binary
//! exits with it; `summary.json` keeps the number ([`ExitCode::code`]).
//!
//! Core layer: imports nothing of the crate.

/// A row of `docs/cli.md`'s exit-code table. A unit test reads the table
/// from `docs/cli.md` itself, so the two cannot drift apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExitCode {
    /// 0: the run met its expectation: every invariant holds, or exactly
    /// the expected ones are violated; every threshold met.
    Met,
    /// 1: the expectation was not met: an invariant violated that should
    /// hold, an expected violation not found, or a threshold breached.
    NotMet,
    /// 2: a usage error, or an invalid scenario or statement file (nothing
    /// ran); also a refused input (rows already there, a taken or
    /// non-empty run folder, a file over its size cap).
    Usage,
    /// 3: the target could not be used (unreachable, schema refused, dead,
    /// not conforming), a file of the run folder could not be written, or
    /// an audit that cannot confirm the run's records.
    Target,
    /// 4: inconclusive: some verdict unknown, or something the run never
    /// exercised, and nothing violated unexpectedly.
    Inconclusive,
    /// 130: interrupted (Ctrl-C, SIGTERM): partial results saved.
    Interrupted,
}

impl ExitCode {
    /// Every row, in the table's order.
    pub const ALL: [ExitCode; 6] = [
        ExitCode::Met,
        ExitCode::NotMet,
        ExitCode::Usage,
        ExitCode::Target,
        ExitCode::Inconclusive,
        ExitCode::Interrupted,
    ];

    /// When several apply, the first of these decides (cli.md: 2 before
    /// anything runs, then 130, 3, 1, 4); none of them: [`ExitCode::Met`].
    pub const PRECEDENCE: [ExitCode; 5] = [
        ExitCode::Usage,
        ExitCode::Interrupted,
        ExitCode::Target,
        ExitCode::NotMet,
        ExitCode::Inconclusive,
    ];

    /// The process's exit status, as `summary.json`'s `exit.code` holds it.
    pub const fn code(self) -> i32 {
        match self {
            ExitCode::Met => 0,
            ExitCode::NotMet => 1,
            ExitCode::Usage => 2,
            ExitCode::Target => 3,
            ExitCode::Inconclusive => 4,
            ExitCode::Interrupted => 130,
        }
    }

    /// The row of `code`; None for a number the table does not have.
    pub fn from_code(code: i32) -> Option<ExitCode> {
        ExitCode::ALL.into_iter().find(|c| c.code() == code)
    }

    /// How the row's meaning begins in cli.md's table (the test holds the
    /// two together).
    pub const fn meaning(self) -> &'static str {
        match self {
            ExitCode::Met => "the run met its expectation",
            ExitCode::NotMet => "the expectation was not met",
            ExitCode::Usage => "a usage error, or an invalid scenario or statement file",
            ExitCode::Target => "the target could not be used",
            ExitCode::Inconclusive => "inconclusive",
            ExitCode::Interrupted => "interrupted",
        }
    }
}

impl From<ExitCode> for i32 {
    fn from(c: ExitCode) -> i32 {
        c.code()
    }
}

/// An exit code is its number (`assert_eq!(report.code, 0)`).
impl PartialEq<i32> for ExitCode {
    fn eq(&self, code: &i32) -> bool {
        self.code() == *code
    }
}

#[cfg(test)]
mod tests {
    use super::ExitCode;

    const CLI_MD: &str = include_str!("../docs/cli.md");

    /// The (code, meaning) rows of cli.md's "## Exit codes" table.
    fn table() -> Vec<(i32, String)> {
        let section = CLI_MD
            .split("\n## Exit codes\n")
            .nth(1)
            .expect("cli.md has an '## Exit codes' section");
        let section = section.split("\n## ").next().unwrap_or(section);
        section
            .lines()
            .filter_map(|l| {
                let cells: Vec<&str> = l.trim().strip_prefix('|')?.split('|').collect();
                let code = cells.first()?.trim().parse().ok()?;
                Some((code, cells.get(1)?.trim().to_string()))
            })
            .collect()
    }

    #[test]
    fn the_enum_is_cli_md_s_table() {
        let rows = table();
        let codes: Vec<i32> = rows.iter().map(|(c, _)| *c).collect();
        let ours: Vec<i32> = ExitCode::ALL.iter().map(|c| c.code()).collect();
        assert_eq!(codes, ours, "cli.md's exit codes and ExitCode's");
        for ((code, meaning), c) in rows.iter().zip(ExitCode::ALL) {
            assert!(
                meaning.starts_with(c.meaning()),
                "exit {code}: cli.md says {meaning:?}; ExitCode::{c:?} says {:?}",
                c.meaning()
            );
            assert_eq!(ExitCode::from_code(*code), Some(c));
        }
        assert_eq!(ExitCode::from_code(5), None);
    }

    #[test]
    fn the_precedence_is_cli_md_s_order() {
        let text: String = CLI_MD.split_whitespace().collect::<Vec<_>>().join(" ");
        let order = text
            .split("the first in this order decides: ")
            .nth(1)
            .and_then(|s| s.split(" else 0.").next())
            .expect("cli.md says in which order the codes decide");
        let numbers: Vec<i32> = order
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse().ok())
            .collect();
        let ours: Vec<i32> = ExitCode::PRECEDENCE.iter().map(|c| c.code()).collect();
        assert_eq!(numbers, ours, "cli.md's order: {order:?}");
    }
}
