//! `fake-model`: the fake model server as a standalone program, for running
//! real agent CLIs against it by hand or from scripts.
//!
//! ```text
//! fake-model --script FILE.json [--port N] [--port-file PATH] [--log PATH.jsonl]
//! ```
//!
//! Prints `http://127.0.0.1:PORT` as the first line of stdout, writes the
//! port to `--port-file` (atomically), appends every request to `--log` as a
//! JSON line, and serves until SIGTERM or SIGINT, then exits 0.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use gavel_test_support::fake_model::{FakeModel, FakeOptions, FakeScript};
use nix::sys::signal::{SigSet, Signal};

const USAGE: &str = "usage: fake-model --script FILE.json [--port N] [--port-file PATH] [--log PATH.jsonl]";

#[derive(Debug, Default)]
struct Args {
    script: Option<PathBuf>,
    port: u16,
    port_file: Option<PathBuf>,
    log: Option<PathBuf>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args::default();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value.to_owned())),
            _ => (arg.clone(), None),
        };
        if flag == "-h" || flag == "--help" {
            return Err(String::new());
        }
        let mut value =
            || inline.clone().or_else(|| args.next()).ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--script" => parsed.script = Some(PathBuf::from(value()?)),
            "--port" => {
                let text = value()?;
                parsed.port = text.parse().map_err(|_| format!("--port: not a port number: {text:?}"))?;
            }
            "--port-file" => parsed.port_file = Some(PathBuf::from(value()?)),
            "--log" => parsed.log = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if parsed.script.is_none() {
        return Err("--script is required".to_owned());
    }
    Ok(parsed)
}

fn write_port_file(path: &PathBuf, port: u16) -> std::io::Result<()> {
    let mut tmp = path.clone().into_os_string();
    tmp.push(".tmp");
    std::fs::write(&tmp, format!("{port}\n"))?;
    std::fs::rename(&tmp, path)
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) if message.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("fake-model: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // Block the stop signals before any thread starts, so that every thread
    // inherits the mask and the main thread receives them with sigwait.
    let mut stop = SigSet::empty();
    stop.add(Signal::SIGTERM);
    stop.add(Signal::SIGINT);
    if let Err(err) = stop.thread_block() {
        eprintln!("fake-model: cannot block signals: {err}");
        return ExitCode::FAILURE;
    }
    let Some(script_path) = &args.script else {
        return ExitCode::from(2);
    };
    let script = match FakeScript::from_file(script_path) {
        Ok(script) => script,
        Err(err) => {
            eprintln!("fake-model: cannot load script {}: {err}", script_path.display());
            return ExitCode::from(2);
        }
    };
    let options = FakeOptions { port: args.port, log_path: args.log.clone() };
    let server = match FakeModel::start_blocking_with(script, options) {
        Ok(server) => server,
        Err(err) => {
            eprintln!("fake-model: cannot start: {err}");
            return ExitCode::FAILURE;
        }
    };
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "{}", server.url()).and_then(|()| stdout.flush()).is_err() {
        eprintln!("fake-model: cannot write to stdout");
    }
    drop(stdout);
    if let Some(path) = &args.port_file
        && let Err(err) = write_port_file(path, server.port())
    {
        eprintln!("fake-model: cannot write port file {}: {err}", path.display());
        return ExitCode::FAILURE;
    }
    match stop.wait() {
        Ok(signal) => eprintln!("fake-model: {signal}, shutting down"),
        Err(err) => eprintln!("fake-model: waiting for a signal failed: {err}"),
    }
    drop(server);
    ExitCode::SUCCESS
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, String> {
        parse_args(args.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn parses_flags() {
        let args =
            parse(&["--script", "s.json", "--port=9", "--port-file", "p", "--log", "l.jsonl"]).unwrap();
        assert_eq!(args.script, Some(PathBuf::from("s.json")));
        assert_eq!(args.port, 9);
        assert_eq!(args.port_file, Some(PathBuf::from("p")));
        assert_eq!(args.log, Some(PathBuf::from("l.jsonl")));
    }

    #[test]
    fn rejects_bad_usage() {
        assert!(parse(&[]).unwrap_err().contains("--script"));
        assert!(parse(&["--script"]).unwrap_err().contains("needs a value"));
        assert!(parse(&["--script", "s", "--port", "x"]).unwrap_err().contains("port"));
        assert!(parse(&["--script", "s", "--what"]).unwrap_err().contains("unknown"));
        assert_eq!(parse(&["--help"]).unwrap_err(), "");
    }
}
