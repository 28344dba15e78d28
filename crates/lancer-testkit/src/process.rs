//! Running processes in tests: a command that must succeed or must fail with a given
//! exit code, and [`Cli`], a runner for one binary (the `lancer` CLI's tests pass it
//! `env!("CARGO_BIN_EXE_lancer")`, which only the CLI crate's tests can name).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `cmd`, which must exit 0; returns its output. A failure names the command and
/// shows its exit status, stderr and stdout.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = output(cmd);
    if !out.status.success() {
        panic!("{}", report(cmd, &out, "failed"));
    }
    out
}

/// Runs `cmd`, which must exit with `code` (a usage error is 2 for clap, say); returns
/// its output. A different outcome names the command and shows its output.
pub fn run_fails(cmd: &mut Command, code: i32) -> Output {
    let out = output(cmd);
    if out.status.code() != Some(code) {
        panic!("{}", report(cmd, &out, &format!("should exit {code}")));
    }
    out
}

/// Standard output as text, trimmed.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Standard error as text, trimmed.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).trim().to_string()
}

fn output(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

fn report(cmd: &Command, out: &Output, what: &str) -> String {
    format!(
        "{cmd:?} {what} ({})\n--- stderr ---\n{}\n--- stdout ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim_end(),
        String::from_utf8_lossy(&out.stdout).trim_end()
    )
}

/// A command-line binary under test.
#[derive(Debug, Clone)]
pub struct Cli {
    bin: PathBuf,
}

impl Cli {
    /// The binary at `bin` (it must exist: cargo builds a package's binaries for its
    /// integration tests).
    pub fn new(bin: impl Into<PathBuf>) -> Cli {
        let bin = bin.into();
        assert!(bin.is_file(), "{} is not built", bin.display());
        Cli { bin }
    }

    /// The binary.
    pub fn bin(&self) -> &Path {
        &self.bin
    }

    /// A command running the binary, without arguments yet.
    pub fn command(&self) -> Command {
        Command::new(&self.bin)
    }

    /// Runs the binary with `args`, which must succeed; returns its output.
    pub fn ok<I, S>(&self, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        run_ok(self.command().args(args))
    }

    /// Runs the binary with `args`, which must succeed; returns its stdout, trimmed.
    pub fn stdout<I, S>(&self, args: I) -> String
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        stdout(&self.ok(args))
    }

    /// Runs the binary with `args`, which must exit with `code`; returns its stderr,
    /// trimmed.
    pub fn fails<I, S>(&self, args: I, code: i32) -> String
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        stderr(&run_fails(self.command().args(args), code))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh() -> Cli {
        Cli::new("/bin/sh")
    }

    #[test]
    fn successes_and_expected_failures() {
        assert_eq!(sh().stdout(["-c", "echo hi; echo there >&2"]), "hi");
        assert_eq!(sh().fails(["-c", "echo bad >&2; exit 3"], 3), "bad");
    }

    #[test]
    fn unexpected_outcomes_name_the_command_and_its_output() {
        let msg = |f: fn()| {
            *std::panic::catch_unwind(f)
                .unwrap_err()
                .downcast::<String>()
                .unwrap()
        };
        let m = msg(|| {
            sh().ok(["-c", "echo out; echo err >&2; exit 4"]);
        });
        assert!(
            m.contains("/bin/sh") && m.contains("exit status: 4") && m.contains("err"),
            "{m}"
        );
        assert!(m.contains("out"), "{m}");
        let m = msg(|| {
            sh().fails(["-c", "true"], 2);
        });
        assert!(m.contains("should exit 2"), "{m}");
    }
}
