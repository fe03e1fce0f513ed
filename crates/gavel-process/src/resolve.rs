//! Finding the executable the child will run.
//!
//! Done by gavel rather than left to `execvp` so that a missing program is
//! reported as [`SpawnError::NotFound`] naming it and the `PATH` searched, and
//! so the lookup uses the child's `PATH`, not gavel's.

use std::ffi::OsStr;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::SpawnError;
use crate::spec::SpawnSpec;

/// What a candidate path turned out to be.
enum Candidate {
    Executable,
    NotExecutable,
    Missing,
}

fn inspect(path: &Path) -> Candidate {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o111 != 0 => Candidate::Executable,
        Ok(_) => Candidate::NotExecutable,
        Err(_) => Candidate::Missing,
    }
}

/// Checks the working directory, then resolves the program to a path.
pub(crate) fn resolve(spec: &SpawnSpec, path_var: Option<&OsStr>) -> Result<PathBuf, SpawnError> {
    let program = spec.program_display();
    match std::fs::metadata(&spec.cwd) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return Err(SpawnError::Cwd {
                program,
                cwd: spec.cwd.clone(),
                source: io::Error::new(io::ErrorKind::NotADirectory, "not a directory"),
            });
        }
        Err(source) => {
            return Err(SpawnError::Cwd { program, cwd: spec.cwd.clone(), source });
        }
    }

    if spec.program.is_empty() {
        return Err(SpawnError::NotFound {
            program,
            cwd: spec.cwd.clone(),
            searched: "empty program name".into(),
        });
    }

    if spec.program_is_path() {
        // A relative path is taken relative to the child's cwd, which is what
        // a workflow author means by `./tool`.
        let path = spec.cwd.join(&spec.program);
        return match inspect(&path) {
            Candidate::Executable => Ok(path),
            Candidate::NotExecutable => Err(SpawnError::PermissionDenied { program, cwd: spec.cwd.clone() }),
            Candidate::Missing => Err(SpawnError::NotFound {
                program,
                cwd: spec.cwd.clone(),
                searched: format!("no file at {}", path.display()),
            }),
        };
    }

    let Some(path_var) = path_var else {
        return Err(SpawnError::NotFound {
            program,
            cwd: spec.cwd.clone(),
            searched: "the child has no PATH".into(),
        });
    };
    let mut saw_non_executable = false;
    for dir in std::env::split_paths(path_var) {
        // POSIX: an empty PATH entry means the current directory (the child's).
        let dir = if dir.as_os_str().is_empty() { spec.cwd.clone() } else { spec.cwd.join(dir) };
        let candidate = dir.join(&spec.program);
        match inspect(&candidate) {
            Candidate::Executable => return Ok(candidate),
            Candidate::NotExecutable => saw_non_executable = true,
            Candidate::Missing => {}
        }
    }
    if saw_non_executable {
        // Same as execvp: a match that cannot be executed is EACCES, not ENOENT.
        return Err(SpawnError::PermissionDenied { program, cwd: spec.cwd.clone() });
    }
    Err(SpawnError::NotFound {
        program,
        cwd: spec.cwd.clone(),
        searched: format!("searched PATH={}", Path::new(path_var).display()),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn write_file(path: &Path, mode: u32) {
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn finds_first_executable_on_child_path() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a");
        let b = tmp.path().join("b");
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        write_file(&a.join("tool"), 0o644);
        write_file(&b.join("tool"), 0o755);
        let path = std::env::join_paths([&a, &b]).unwrap();
        let spec = SpawnSpec::new("tool", tmp.path());
        assert_eq!(resolve(&spec, Some(&path)).unwrap(), b.join("tool"));
    }

    #[test]
    fn only_non_executable_match_is_permission_denied() {
        let tmp = tempfile::tempdir().unwrap();
        write_file(&tmp.path().join("tool"), 0o644);
        let spec = SpawnSpec::new("tool", tmp.path());
        let path = OsString::from(tmp.path());
        assert!(matches!(resolve(&spec, Some(&path)), Err(SpawnError::PermissionDenied { .. })));
    }

    #[test]
    fn missing_name_reports_the_path_searched() {
        let tmp = tempfile::tempdir().unwrap();
        let spec = SpawnSpec::new("no-such-tool", tmp.path());
        let err = resolve(&spec, Some(OsStr::new("/nonexistent-dir"))).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, SpawnError::NotFound { .. }));
        assert!(msg.contains("`no-such-tool`"), "{msg}");
        assert!(msg.contains("PATH=/nonexistent-dir"), "{msg}");
    }

    #[test]
    fn no_path_at_all_is_not_found() {
        let tmp = tempfile::tempdir().unwrap();
        let spec = SpawnSpec::new("sh", tmp.path());
        assert!(matches!(resolve(&spec, None), Err(SpawnError::NotFound { .. })));
    }

    #[test]
    fn relative_path_is_relative_to_cwd() {
        let tmp = tempfile::tempdir().unwrap();
        write_file(&tmp.path().join("run.sh"), 0o755);
        let spec = SpawnSpec::new("./run.sh", tmp.path());
        assert_eq!(resolve(&spec, None).unwrap(), tmp.path().join("./run.sh"));
    }

    #[test]
    fn directory_is_not_executable() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("dir")).unwrap();
        let spec = SpawnSpec::new("./dir", tmp.path());
        assert!(matches!(resolve(&spec, None), Err(SpawnError::PermissionDenied { .. })));
    }

    #[test]
    fn missing_cwd_is_its_own_error() {
        let tmp = tempfile::tempdir().unwrap();
        let spec = SpawnSpec::new("/bin/sh", tmp.path().join("gone"));
        let err = resolve(&spec, None).unwrap_err();
        assert!(matches!(err, SpawnError::Cwd { .. }), "{err}");
    }
}
