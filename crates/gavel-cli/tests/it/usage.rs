//! gavel never writes a record it cannot read: a turn whose cost is not a
//! finite, non-negative number is an engine error for that request (and the
//! record, `status`, `log` and `resume` still work); costs too large to add
//! saturate, and the budget stops the run; a budget that is no number is
//! refused where it is given.

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::common::{Out, events, gavel, record_path, tempdir};

/// A one-stage workflow whose builder is a script with `turns`, and
/// `options` under `[options]`.
fn workflow(dir: &Path, turns: &str, options: &str) -> PathBuf {
    std::fs::write(dir.join("brief.md"), "# Welcome\n\nWrite welcome.md.\n").unwrap();
    std::fs::write(dir.join("writer.toml"), turns).unwrap();
    let path = dir.join("workflow.toml");
    std::fs::write(
        &path,
        format!(
            "name = \"usage\"\nbrief = \"brief.md\"\n\n[options]\n{options}\n\n[seats]\nwriter = {{ engine = \"script\", script = \"writer.toml\" }}\n\n[[stage]]\nname = \"page\"\nagent = \"writer\"\nwrites = [\"welcome.md\"]\nrefine = 3\n"
        ),
    )
    .unwrap();
    path
}

/// A builder turn costing `cost` that writes `file` (nothing when empty).
fn turn(cost: &str, file: &str) -> String {
    let files =
        if file.is_empty() { String::new() } else { format!("files = {{ {file:?} = \"# Welcome\\n\" }}\n") };
    format!(
        "[[write]]\nreply = \"Wrote it.\"\n{files}usage = {{ input_tokens = 10, output_tokens = 5, cost_usd = {cost} }}\n\n"
    )
}

fn run(workflow: &Path, ws: &Path, id: &str, extra: &[&str]) -> Out {
    let mut args = args!["run", workflow, "--workspace", ws, "--run-id", id, "--json"];
    args.extend(extra.iter().map(std::ffi::OsString::from));
    gavel(args)
}

/// Every `cost_usd` in the record is a number; no `null`, no string.
#[track_caller]
fn costs_are_numbers(events: &[Value]) -> Vec<f64> {
    let mut costs = Vec::new();
    for event in events {
        for usage in [&event["data"]["usage"]].into_iter().filter(|u| !u.is_null()) {
            let cost = &usage["cost_usd"];
            assert!(cost.is_number(), "cost_usd is {cost} in {event}");
            costs.push(cost.as_f64().unwrap());
        }
    }
    costs
}

#[test]
fn a_cost_that_is_not_a_finite_non_negative_number_is_an_engine_error() {
    for (bad, words) in [("nan", "NaN"), ("inf", "inf"), ("-inf", "-inf"), ("-1.5", "negative")] {
        let dir = tempdir();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        // The first turn reports the bad figure; the second, asked once more, is fine.
        let flow = workflow(dir.path(), &(turn(bad, "welcome.md") + &turn("0.5", "welcome.md")), "");
        let out = run(&flow, &ws, "bad", &[]);
        out.expect_code(0);
        assert_eq!(out.json()["usage"]["cost_usd"], 0.5, "{bad}: only the good reply counts");

        let record = events(&record_path(&ws, "bad"));
        let errors: Vec<&Value> = record.iter().filter(|e| e["kind"] == "seat:error").collect();
        assert_eq!(errors.len(), 1, "{bad}: one engine error\n{record:?}");
        let message = errors[0]["data"]["error"].as_str().unwrap();
        assert!(
            message.contains("cost_usd") && message.contains(words),
            "{bad}: names the figure: {message}"
        );
        assert_eq!(errors[0]["data"]["attempt"], 1);
        assert_eq!(costs_are_numbers(&record), [0.5, 0.5], "{bad}");

        // Every reader reads the record.
        let status = gavel(args!["status", "bad", "--workspace", ws, "--json"]);
        status.expect_code(0);
        assert_eq!(status.json()["usage"]["cost_usd"], 0.5, "{bad}");
        gavel(args!["log", "bad", "--workspace", ws]).expect_code(0);
        gavel(args!["resume", "bad", "--workspace", ws]).expect_code(0);
    }
}

#[test]
fn a_cost_reported_twice_as_bad_pauses_the_run_with_a_readable_record() {
    let dir = tempdir();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let flow = workflow(dir.path(), &turn("nan", "welcome.md"), "");
    let out = run(&flow, &ws, "nan", &[]);
    out.expect_code(4);
    assert!(out.json()["summary"].as_str().unwrap().contains("cost_usd"), "{}", out.stdout);
    let record = events(&record_path(&ws, "nan"));
    assert!(record.iter().all(|e| e["kind"] != "seat:reply"), "no reply with a NaN cost was recorded");
    costs_are_numbers(&record);
    gavel(args!["status", "nan", "--workspace", ws, "--json"]).expect_code(0);
    gavel(args!["log", "nan", "--workspace", ws]).expect_code(0);
}

#[test]
fn huge_costs_saturate_and_the_budget_stops_the_run() {
    let dir = tempdir();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    // Round 1 leaves the file out (so a round 2 is asked for); each turn costs 1e308.
    let flow = workflow(
        dir.path(),
        &(turn("1e308", "") + &turn("1e308", "") + &turn("1e308", "welcome.md")),
        "max_cost_usd = 1.0",
    );
    let out = run(&flow, &ws, "huge", &[]);
    out.expect_code(3);
    let outcome = out.json();
    assert_eq!(outcome["waiting_for"], "budget");
    assert!(outcome["summary"].as_str().unwrap().contains("budget_limited"), "{outcome}");
    assert_eq!(outcome["usage"]["cost_usd"], 1e308);

    // The largest budget there is: one more request, and 1e308 + 1e308 is
    // the largest finite total, which that budget does not exceed... and
    // does reach: the run pauses again instead of spending without end.
    let max = format!("{}", f64::MAX);
    let resumed = gavel(args!["resume", "huge", "--workspace", ws, "--json", "--max-cost-usd", max]);
    resumed.expect_code(3);
    let outcome = resumed.json();
    assert_eq!(outcome["waiting_for"], "budget");
    assert_eq!(outcome["usage"]["cost_usd"].as_f64(), Some(f64::MAX), "{outcome}");

    let record = events(&record_path(&ws, "huge"));
    assert_eq!(costs_are_numbers(&record), [1e308, 1e308]);
    let status = gavel(args!["status", "huge", "--workspace", ws, "--json"]);
    status.expect_code(0);
    assert_eq!(status.json()["usage"]["cost_usd"].as_f64(), Some(f64::MAX));
    gavel(args!["log", "huge", "--workspace", ws]).expect_code(0);
}

#[test]
fn a_budget_that_is_no_positive_number_is_refused_where_it_is_given() {
    let dir = tempdir();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    for bad in ["nan", "inf", "-inf", "-1", "0", "1e309", "lots"] {
        let out = gavel(args!["resume", "any", "--workspace", ws, format!("--max-cost-usd={bad}")]);
        assert_eq!(out.code, 2, "--max-cost-usd {bad}: {}", out.stderr);
        assert!(out.stderr.contains("--max-cost-usd"), "{}", out.stderr);
        assert!(out.stderr.contains("positive number of US dollars"), "{}", out.stderr);
    }
    for bad in ["nan", "inf", "-inf", "-1.0", "0.0", "1e309"] {
        let flow = workflow(dir.path(), &turn("0.1", "welcome.md"), &format!("max_cost_usd = {bad}"));
        let out = gavel(args!["check", flow]);
        assert_eq!(out.code, 2, "max_cost_usd = {bad}: {}", out.stderr);
        assert!(out.stderr.contains("workflow.toml:5:"), "located: {}", out.stderr);
        assert!(out.stderr.contains("max_cost_usd"), "{}", out.stderr);
    }
    // A seat's price is a user-given figure too.
    for bad in ["nan", "inf", "-inf", "-3.0"] {
        let flow = workflow(dir.path(), &turn("0.1", "welcome.md"), "");
        let text = std::fs::read_to_string(&flow).unwrap().replace(
            "script = \"writer.toml\" }",
            &format!("script = \"writer.toml\", price = {{ input = {bad}, output = 1.0 }} }}"),
        );
        std::fs::write(&flow, text).unwrap();
        let out = gavel(args!["check", flow]);
        assert_eq!(out.code, 2, "price {bad}: {}", out.stderr);
        assert!(out.stderr.contains("workflow.toml:8:10"), "located: {}", out.stderr);
        assert!(out.stderr.contains("price"), "{}", out.stderr);
    }
}
