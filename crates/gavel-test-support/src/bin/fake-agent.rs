//! `fake-agent`: a scriptable stand-in for an AI coding agent CLI, used by
//! gavel's tests to exercise process handling with real processes and
//! signals. Flags run in the order given; all flags are checked before any
//! runs, so a bad invocation has no side effects.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use nix::sys::signal::{SigSet, Signal};

const USAGE: &str = "\
usage: fake-agent [FLAG]...
flags run in order:
  --print TEXT          write TEXT and a newline to stdout
  --stderr TEXT         write TEXT and a newline to stderr
  --flood BYTES         write BYTES bytes of text to stdout, fast
  --ignore-term         block SIGTERM so it is never delivered (inherited by children)
  --leak-grandchild     spawn a copy of itself that sleeps forever, holding
                        stdout/stderr, in the same process group; do not wait
  --sleep-ms N          sleep N milliseconds
  --sleep-forever       sleep until killed
  --write FILE=TEXT     write TEXT to FILE (relative to cwd)
  --print-env NAME      print NAME=value, or `NAME unset`
  --print-cwd           print the working directory
  --read-stdin          read stdin to EOF, print `stdin-bytes=N`
  --exit N              exit now with code N
  --pid-file PATH       write own pid to PATH (and a leaked grandchild's
                        pid to PATH.grandchild)
exit codes: as given by --exit, else 0; 64 on bad usage; 74 on IO errors";

/// Exit code for bad usage (sysexits EX_USAGE).
const EX_USAGE: u8 = 64;
/// Exit code for IO failures (sysexits EX_IOERR).
const EX_IOERR: u8 = 74;

#[derive(Debug)]
enum Action {
    Print(String),
    Stderr(String),
    Flood(u64),
    IgnoreTerm,
    LeakGrandchild,
    SleepMs(u64),
    SleepForever,
    Write(PathBuf, String),
    PrintEnv(String),
    PrintCwd,
    ReadStdin,
    Exit(u8),
    PidFile(PathBuf),
}

fn parse(args: &[String]) -> Result<Vec<Action>, String> {
    let mut actions = Vec::new();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| format!("{flag} needs a value"));
        let number = |text: String| text.parse::<u64>().map_err(|_| format!("{flag}: not a number: {text}"));
        let action = match flag.as_str() {
            "--print" => Action::Print(value()?),
            "--stderr" => Action::Stderr(value()?),
            "--flood" => Action::Flood(number(value()?)?),
            "--ignore-term" => Action::IgnoreTerm,
            "--leak-grandchild" => Action::LeakGrandchild,
            "--sleep-ms" => Action::SleepMs(number(value()?)?),
            "--sleep-forever" => Action::SleepForever,
            "--write" => {
                let spec = value()?;
                let (file, text) =
                    spec.split_once('=').ok_or_else(|| format!("--write wants FILE=TEXT, got {spec}"))?;
                if file.is_empty() {
                    return Err("--write: empty file name".into());
                }
                Action::Write(PathBuf::from(file), text.to_owned())
            }
            "--print-env" => Action::PrintEnv(value()?),
            "--print-cwd" => Action::PrintCwd,
            "--read-stdin" => Action::ReadStdin,
            "--exit" => {
                let text = value()?;
                Action::Exit(text.parse::<u8>().map_err(|_| format!("--exit: not a code 0-255: {text}"))?)
            }
            "--pid-file" => Action::PidFile(PathBuf::from(value()?)),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown flag: {other}")),
        };
        actions.push(action);
    }
    Ok(actions)
}

/// State carried between actions: the pid file and a leaked grandchild must
/// meet whichever order they come in.
#[derive(Default)]
struct State {
    pid_file: Option<PathBuf>,
    grandchild: Option<u32>,
}

impl State {
    fn write_grandchild(&self) -> io::Result<()> {
        if let (Some(path), Some(pid)) = (&self.pid_file, self.grandchild) {
            let mut name = path.clone().into_os_string();
            name.push(".grandchild");
            write_atomic(Path::new(&name), &pid.to_string())?;
        }
        Ok(())
    }
}

/// Writes via a temp file and rename, so a test polling for the file never
/// reads it half-written.
fn write_atomic(path: &Path, text: &str) -> io::Result<()> {
    let mut tmp = path.to_path_buf().into_os_string();
    tmp.push(".tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

fn flood(out: &mut impl Write, mut bytes: u64) -> io::Result<()> {
    // Lines of 64 bytes so line-oriented readers see a sane stream.
    let line = b"flood flood flood flood flood flood flood flood flood flood ...\n";
    let block: Vec<u8> = line.iter().copied().cycle().take(64 * 1024).collect();
    while bytes > 0 {
        let n = usize::try_from(bytes.min(block.len() as u64)).unwrap_or(block.len());
        out.write_all(&block[..n])?;
        bytes -= n as u64;
    }
    out.flush()
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn act(action: Action, state: &mut State) -> io::Result<Option<u8>> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match action {
        Action::Print(text) => {
            writeln!(out, "{text}")?;
            out.flush()?;
        }
        Action::Stderr(text) => {
            let mut err = io::stderr().lock();
            writeln!(err, "{text}")?;
            err.flush()?;
        }
        Action::Flood(bytes) => flood(&mut out, bytes)?,
        Action::IgnoreTerm => {
            let mut set = SigSet::empty();
            set.add(Signal::SIGTERM);
            set.thread_block().map_err(io::Error::from)?;
        }
        Action::LeakGrandchild => {
            // stdin/stdout/stderr are inherited and the process group is
            // the same by default, which is exactly the leak we want.
            let child = Command::new(std::env::current_exe()?).arg("--sleep-forever").spawn()?;
            state.grandchild = Some(child.id());
            // Dropping a std Child neither waits for nor kills it.
            drop(child);
            state.write_grandchild()?;
        }
        Action::SleepMs(ms) => std::thread::sleep(Duration::from_millis(ms)),
        Action::SleepForever => {
            out.flush()?;
            sleep_forever()
        }
        Action::Write(file, text) => std::fs::write(file, text)?,
        Action::PrintEnv(name) => {
            match std::env::var_os(&name) {
                Some(value) => writeln!(out, "{name}={}", value.to_string_lossy())?,
                None => writeln!(out, "{name} unset")?,
            }
            out.flush()?;
        }
        Action::PrintCwd => {
            writeln!(out, "{}", std::env::current_dir()?.display())?;
            out.flush()?;
        }
        Action::ReadStdin => {
            let mut buf = Vec::new();
            io::stdin().lock().read_to_end(&mut buf)?;
            writeln!(out, "stdin-bytes={}", buf.len())?;
            out.flush()?;
        }
        Action::Exit(code) => {
            out.flush()?;
            return Ok(Some(code));
        }
        Action::PidFile(path) => {
            write_atomic(&path, &std::process::id().to_string())?;
            state.pid_file = Some(path);
            state.write_grandchild()?;
        }
    }
    Ok(None)
}

fn main() -> ExitCode {
    let args: Vec<String> = match std::env::args_os().skip(1).map(std::ffi::OsString::into_string).collect() {
        Ok(args) => args,
        Err(bad) => {
            eprintln!("fake-agent: argument is not UTF-8: {}\n{USAGE}", bad.to_string_lossy());
            return ExitCode::from(EX_USAGE);
        }
    };
    let actions = match parse(&args) {
        Ok(actions) => actions,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("fake-agent: {message}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(EX_USAGE);
        }
    };
    let mut state = State::default();
    for action in actions {
        match act(action, &mut state) {
            Ok(None) => {}
            Ok(Some(code)) => return ExitCode::from(code),
            Err(err) => {
                // stderr may be gone too (closed pipe); nothing else to do.
                let _ = writeln!(io::stderr(), "fake-agent: {err}");
                return ExitCode::from(EX_IOERR);
            }
        }
    }
    ExitCode::SUCCESS
}
