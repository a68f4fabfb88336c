//! The real tools, installed once per test run by the project's own
//! `.ci/deploy-tools/install.sh` (idempotent: a second run checks the pinned
//! sha256 sums and returns in about a second).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::root;

pub struct Tools {
    dir: PathBuf,
}

/// What a tool printed, and whether it exited 0.
#[derive(Debug)]
pub struct Outcome {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    /// Both streams, for assertion messages and error text.
    pub fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// The tools, installed on first use; panics with the installer's output
/// when it fails (no network to PyPI or npm, no python3 venv, no node).
pub fn tools() -> &'static Tools {
    static TOOLS: OnceLock<Tools> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("deploy-tools");
        let out = Command::new("bash")
            .arg(root().join(".ci/deploy-tools/install.sh"))
            .arg(&dir)
            .output()
            .expect("bash");
        assert!(
            out.status.success(),
            ".ci/deploy-tools/install.sh failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Tools { dir }
    })
}

impl Tools {
    pub fn bin(&self, name: &str) -> PathBuf {
        self.dir.join("bin").join(name)
    }

    /// A command for tool `name`. Helm keeps its cache and configuration
    /// under the tools' folder, away from the user's own.
    pub fn command(&self, name: &str) -> Command {
        let mut c = Command::new(self.bin(name));
        let home = self.dir.join("helm-home");
        c.env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_DATA_HOME", home.join("data"))
            .env("KUBECONFIG", "/dev/null")
            .current_dir(root());
        c
    }

    pub fn run<I, S>(&self, name: &str, args: I) -> Outcome
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        outcome(self.command(name).args(args))
    }

    /// `node servicemonitor.mjs` with `input` (a JSON array) on stdin.
    pub fn validate_servicemonitors(&self, input: &str) -> Outcome {
        use std::io::Write;
        let mut child = Command::new("node")
            .arg(self.dir.join("npm/servicemonitor.mjs"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("node");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        Outcome {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

pub fn outcome(command: &mut Command) -> Outcome {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    Outcome {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Copies a folder recursively (the chart into an umbrella chart, the
/// build context into a scratch folder).
pub fn copy_dir(from: &Path, to: &Path, keep: &dyn Fn(&Path) -> bool) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        if !keep(&path) {
            continue;
        }
        let dest = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &dest, keep);
        } else {
            std::fs::copy(&path, &dest).unwrap();
        }
    }
}
