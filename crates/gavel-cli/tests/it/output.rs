//! Command output is stored clean and truthful: commands gavel runs get
//! `NO_COLOR=1`, `CLICOLOR=0`, `TERM=dumb`, `FORCE_COLOR=0` whatever gavel
//! was started with; what they print anyway is stripped of escape sequences
//! and control characters in the record, the feedback to a builder, goal
//! evidence files, `state.md` and the stop hook's reason; and
//! `output_truncated` is true exactly when what is kept is less than what
//! was printed.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::common::{Out, events, gavel_cmd, output, record_path, tempdir};

/// Prints colour, a hyperlink, a title, a progress line redrawn with `\r`
/// and a bell; then, only when its environment asks for colour, more
/// colour; then fails.
const COLOURED: &str = r#"printf '\033[31mFAIL\033[0m test_a\n\033]8;;http://x.invalid\033\\the link\033]8;;\033\\\n\033]0;title\007 10%%\r 100%%\n\007bell\n'; if [ "$NO_COLOR" = 1 ] && [ "$CLICOLOR" = 0 ] && [ "$TERM" = dumb ] && [ "$FORCE_COLOR" = 0 ]; then echo 'plain by env'; else printf '\033[1;32mcoloured by env\033[0m\n'; fi; exit 1"#;

/// Whether text holds an escape or a control character other than `\n`/`\t`.
fn has_controls(text: &str) -> bool {
    text.chars().any(|c| c.is_control() && c != '\n' && c != '\t')
}

#[track_caller]
fn assert_clean(text: &str, what: &str) {
    assert!(!has_controls(text), "{what} holds control characters: {text:?}");
    assert!(text.contains("FAIL test_a"), "{what}: {text:?}");
    assert!(text.contains("the link"), "{what}: the link's text stays: {text:?}");
    assert!(
        text.contains(" 100%") && !text.contains("10%\n"),
        "{what}: the redrawn line's last state: {text:?}"
    );
    assert!(text.contains("plain by env") && !text.contains("coloured by env"), "{what}: the env: {text:?}");
}

/// `gavel` in `dir` with a colourful terminal in its own environment.
fn gavel_colourful(dir: &Path, args: &[&str]) -> Out {
    let mut cmd = gavel_cmd();
    cmd.current_dir(dir)
        .args(args)
        .env("TERM", "xterm-256color")
        .env("CLICOLOR_FORCE", "1")
        .env("FORCE_COLOR", "3")
        .env("COLORTERM", "truecolor");
    output(&mut cmd)
}

/// A workflow: a scripted builder, then a `run` stage with `command` that
/// sends failures back to it.
fn run_workflow(dir: &Path, command: &str) -> PathBuf {
    std::fs::write(dir.join("brief.md"), "# Page\n\nWrite page.md.\n").unwrap();
    std::fs::write(
        dir.join("writer.toml"),
        "[[write]]\nreply = \"Wrote it.\"\nfiles = { \"page.md\" = \"# Page\\n\" }\n",
    )
    .unwrap();
    let path = dir.join("workflow.toml");
    std::fs::write(
        &path,
        format!(
            "name = \"output\"\nbrief = \"brief.md\"\n\n[seats]\nwriter = {{ engine = \"script\", script = \"writer.toml\" }}\n\n[[stage]]\nname = \"page\"\nagent = \"writer\"\nwrites = [\"page.md\"]\n\n[[stage]]\nname = \"test\"\nrun = {}\nsends_back_to = \"page\"\n",
            toml_string(command)
        ),
    )
    .unwrap();
    path
}

fn toml_string(text: &str) -> String {
    format!("'''{text}'''")
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

#[test]
fn a_run_stage_s_colour_never_reaches_the_record_or_the_builder() {
    let dir = tempdir();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let flow = run_workflow(dir.path(), COLOURED);
    let flow = flow.to_str().unwrap();
    let out =
        gavel_colourful(dir.path(), &["run", flow, "--workspace", ws.to_str().unwrap(), "--run-id", "c"]);
    assert_eq!(out.code, 1, "the command always fails: {}", out.stderr);
    let record = events(&record_path(&ws, "c"));
    let checks = of_kind(&record, "check:run");
    assert!(!checks.is_empty());
    for check in &checks {
        assert_clean(check["data"]["output_tail"].as_str().unwrap(), "check:run output_tail");
        assert!(check["data"].get("output_truncated").is_none(), "a short output is whole: {check}");
    }
    let kickbacks = of_kind(&record, "kickback");
    assert!(!kickbacks.is_empty(), "the failure went back to the builder");
    for kickback in kickbacks {
        for finding in kickback["data"]["findings"].as_array().unwrap() {
            let evidence = finding["evidence"].as_str().unwrap();
            // After the command line (which names both branches): what it printed.
            let printed = evidence.split_once("Its output ends:").map(|(_, p)| p).unwrap_or_default();
            assert!(!has_controls(evidence), "the builder's finding: {evidence:?}");
            assert_clean(printed, "the builder's finding");
        }
    }
    // And what a person sees.
    let log = gavel_colourful(dir.path(), &["log", "c", "--workspace", ws.to_str().unwrap()]);
    assert!(!log.stdout.contains('\u{1b}'), "{}", log.stdout);
}

#[test]
fn output_truncated_is_true_whenever_less_is_kept_than_was_printed() {
    // (command, is the kept tail all of it)
    let cases = [
        ("printf 'short\\n'; exit 1", true),
        // 4 KiB of text fits whole; its escape codes do not count.
        ("printf '\\033[31m'; head -c 4096 /dev/zero | tr '\\0' x; printf '\\033[0m'; exit 1", true),
        // Longer than the 4 KiB tail, within what the process keeps.
        ("seq 1 5000; exit 1", false),
        // Longer than the process keeps (head and tail).
        ("head -c 400000 /dev/zero | tr '\\0' y; echo; echo last line; exit 1", false),
        // The same on stderr.
        ("seq 1 5000 >&2; exit 1", false),
    ];
    for (i, (command, whole)) in cases.into_iter().enumerate() {
        let dir = tempdir();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let flow = run_workflow(dir.path(), command);
        let id = format!("t{i}");
        let out = gavel_colourful(
            dir.path(),
            &["run", flow.to_str().unwrap(), "--workspace", ws.to_str().unwrap(), "--run-id", &id],
        );
        assert_eq!(out.code, 1, "{command}: {}", out.stderr);
        let record = events(&record_path(&ws, &id));
        let check = of_kind(&record, "check:run")[0];
        let tail = check["data"]["output_tail"].as_str().unwrap();
        assert!(!has_controls(tail), "{command}");
        assert!(tail.len() <= 8 * 1024 + 1, "{command}: the tail is bounded ({} bytes)", tail.len());
        assert_eq!(
            check["data"]["output_truncated"].as_bool().unwrap_or(false),
            !whole,
            "{command}: {check}"
        );
        if command.contains("seq 1 5000") {
            assert!(tail.ends_with("4999\n5000\n"), "{command}: the tail is the end: {tail:?}");
            assert!(!tail.contains("\n1\n2\n"), "{command}: the start was cut");
        }
    }
}

/// A git repository with a goal whose one criterion runs `command`.
struct Goal {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Goal {
    fn new(command: &str) -> Self {
        let dir = tempdir();
        let root = dir.path().canonicalize().unwrap();
        crate::common::git_repo(&root);
        let goal = root.join(".gavel/goals/g1");
        std::fs::create_dir_all(&goal).unwrap();
        let yaml = format!(
            "id: g1\ntitle: Tests pass\ncriteria:\n  - id: AC1\n    text: The tests pass\n    command: {}\n",
            serde_json::to_string(command).unwrap()
        );
        std::fs::write(goal.join("goal.yaml"), yaml).unwrap();
        Self { _dir: dir, root }
    }

    fn evaluate(&self) -> Value {
        let out = gavel_colourful(&self.root, &["goal", "evaluate", "g1", "--json"]);
        assert_eq!(out.code, 1, "{}", out.stderr);
        serde_json::from_str(&out.stdout).unwrap()
    }

    fn evidence(&self, verdict: &Value) -> String {
        let rel = verdict["criteria"][0]["evidence"].as_str().unwrap();
        std::fs::read_to_string(self.root.join(rel)).unwrap()
    }

    fn criterion_in_record(&self) -> Value {
        let record = events(&self.root.join(".gavel/goals/g1/events.jsonl"));
        let evaluated = record.iter().rev().find(|e| e["kind"] == "goal:evaluated").unwrap();
        evaluated["data"]["criteria"][0].clone()
    }

    fn hook_reason(&self) -> String {
        let input = format!(
            "{{\"session_id\":\"s\",\"transcript_path\":\"/dev/null\",\"cwd\":{},\"hook_event_name\":\"Stop\",\"stop_hook_active\":false}}",
            serde_json::to_string(self.root.to_str().unwrap()).unwrap()
        );
        let mut child = gavel_cmd()
            .args(["hook", "stop"])
            .env("TERM", "xterm-256color")
            .env("FORCE_COLOR", "3")
            .current_dir(&self.root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(answer["decision"], "block", "{answer}");
        answer["reason"].as_str().unwrap().to_owned()
    }
}

#[test]
fn a_goal_criterion_s_colour_never_reaches_evidence_state_md_or_the_hook() {
    let goal = Goal::new(COLOURED);
    let verdict = goal.evaluate();
    let tail = verdict["criteria"][0]["output_tail"].as_str().unwrap();
    assert_clean(tail, "the verdict's output_tail");
    let evidence = goal.evidence(&verdict);
    assert!(!has_controls(&evidence), "the evidence file: {evidence}");
    assert!(evidence.contains("FAIL test_a") && evidence.contains("plain by env"), "{evidence}");
    assert!(evidence.contains("output_truncated: false"), "{evidence}");
    let in_record = goal.criterion_in_record();
    assert_clean(in_record["output_tail"].as_str().unwrap(), "the record's output_tail");
    assert!(in_record.get("output_truncated").is_none(), "{in_record}");
    let state = std::fs::read_to_string(goal.root.join(".gavel/goals/g1/state.md")).unwrap();
    assert!(!has_controls(&state), "state.md: {state}");
    assert!(
        state.contains("FAIL test_a") || state.contains("plain by env"),
        "state.md names the failure: {state}"
    );
    let reason = goal.hook_reason();
    assert!(!has_controls(&reason), "the hook's reason: {reason:?}");
    assert!(reason.contains("FAIL test_a") && reason.contains("plain by env"), "{reason}");
}

#[test]
fn a_goal_criterion_s_long_output_is_marked_truncated() {
    for command in ["seq 1 5000; exit 1", "head -c 400000 /dev/zero | tr '\\0' y; echo; echo last; exit 1"] {
        let goal = Goal::new(command);
        let verdict = goal.evaluate();
        let evidence = goal.evidence(&verdict);
        assert!(evidence.contains("output_truncated: true"), "{command}: {evidence}");
        assert_eq!(goal.criterion_in_record()["output_truncated"], true, "{command}");
    }
    // Longer than the record's 2 KiB but within the evidence file's 8 KiB:
    // the file has it all, the record says its tail is cut.
    let goal = Goal::new("seq 1 1000; exit 1");
    let verdict = goal.evaluate();
    assert!(goal.evidence(&verdict).contains("output_truncated: false"));
    assert_eq!(goal.criterion_in_record()["output_truncated"], true);
}

#[test]
fn escape_sequences_in_replies_and_answers_never_reach_the_terminal() {
    let dir = tempdir();
    let files = dir.path().join("files");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(files.join("seats")).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(files.join("brief.md"), "# Page\n\nWrite it.\n").unwrap();
    std::fs::write(
        files.join("seats/writer.toml"),
        "[[write]]\nreply = \"ok \\u001b]0;TITLE\\u0007 \\u001b[2J\\u001b[31m done \\u009b1m\"\nfiles = { \"page.md\" = \"# Page\\n\" }\n",
    )
    .unwrap();
    std::fs::write(
        files.join("workflow.toml"),
        "name = \"esc\"\nbrief = \"brief.md\"\n\n[seats]\nwriter = { engine = \"script\", script = \"seats/writer.toml\", family = \"anthropic\" }\n\n[[stage]]\nname = \"page\"\nagent = \"writer\"\nwrites = [\"page.md\"]\n\n[[stage]]\nname = \"ok\"\napprove = [\"page.md\"]\n",
    )
    .unwrap();
    std::fs::write(
        files.join("answers.toml"),
        "[ok]\napproved = true\nby = \"eve \\u001b]0;pwned\\u0007\\u001b[2J\"\n",
    )
    .unwrap();
    let run = output(
        gavel_cmd()
            .env("NO_COLOR", "1")
            .arg("run")
            .arg(files.join("workflow.toml"))
            .arg("--workspace")
            .arg(&ws)
            .args(["--run-id", "esc", "--answers"])
            .arg(files.join("answers.toml")),
    );
    run.expect_code(0);
    assert!(!has_controls(&run.stderr), "progress: {:?}", run.stderr);
    assert!(run.stderr.contains("done"), "{}", run.stderr);
    let log = output(gavel_cmd().env("NO_COLOR", "1").current_dir(&ws).args(["log", "esc"]));
    log.expect_code(0);
    assert!(!has_controls(&log.stdout), "gavel log: {:?}", log.stdout);
    assert!(log.stdout.contains("eve"), "{}", log.stdout);
    let status = output(gavel_cmd().env("NO_COLOR", "1").current_dir(&ws).args(["status", "esc"]));
    status.expect_code(0);
    assert!(!has_controls(&status.stdout), "gavel status: {:?}", status.stdout);
    // The record keeps what was said, escaped as JSON.
    let record = events(&record_path(&ws, "esc"));
    let reply = record.iter().find(|e| e["kind"] == "seat:reply").unwrap();
    assert!(reply["data"]["text"].as_str().unwrap().contains('\u{1b}'));
}
