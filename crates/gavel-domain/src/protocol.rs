//! Typed reply protocols: what a goal check, a review, a merge, a
//! vote and a judge must reply, and a reader for each that says precisely
//! what was wrong.
//!
//! A reply is read as the first JSON object in its text
//! ([`crate::reply::first_json_object`]), then checked field by field. Every
//! problem names its JSON path and what to write instead (``
//! `findings[1].severity` is "major"; write one of "block", "should-fix",
//! "nice-to-have" ``), so the one "ask once more" turn can fix it.
//! [`ProtocolError::note`] is that sentence with the expected shape appended.
//!
//! Reading is forgiving where it costs nothing: unknown fields are ignored
//! (models add them), words are matched ignoring case, surrounding space and
//! `_`/space for `-` (`"Should_Fix"` is `should-fix`), an optional `fix` that
//! is `null` or blank counts as absent, and a missing or `null` `findings`
//! list counts as empty. Required text (`evidence`, `requirement`, `reason`,
//! ids) must not be blank.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::kinds::RequestKind;
use crate::reply::{ReplyError, first_json_object};

/// How many field problems a note lists before "and N more".
const MAX_LISTED_PROBLEMS: usize = 6;

/// The string enums of the protocols share their plumbing.
trait Word: Sized + Copy + 'static {
    const ALL: &'static [Self];
    fn as_str(self) -> &'static str;

    /// Reads a word the way a model may write it: any case, `_` or space
    /// for `-`, surrounding space.
    fn from_loose(word: &str) -> Option<Self> {
        let norm: String = word
            .trim()
            .chars()
            .map(|c| if c == '_' || c == ' ' { '-' } else { c.to_ascii_lowercase() })
            .collect();
        Self::ALL.iter().copied().find(|w| w.as_str() == norm)
    }

    /// `"a" or "b"`, or `one of "a", "b", "c"`.
    fn choices() -> String {
        let quoted: Vec<String> = Self::ALL.iter().map(|w| format!("\"{}\"", w.as_str())).collect();
        match quoted.as_slice() {
            [a, b] => format!("{a} or {b}"),
            _ => format!("one of {}", quoted.join(", ")),
        }
    }
}

macro_rules! word_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident => $word:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $word)] $variant, )+
        }

        impl $name {
            /// Every value, in the order the protocol lists them.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The word as the protocol spells it.
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $word),+ }
            }
        }

        impl Word for $name {
            const ALL: &'static [Self] = $name::ALL;
            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

word_enum! {
    /// How much a finding matters: `block` > `should-fix` > `nice-to-have`.
    ///
    /// `Ord` follows strength, so `Block` is the greatest and
    /// [`Severity::strongest`] is a plain maximum.
    pub enum Severity {
        /// The work must not be accepted as it is.
        Block => "block",
        /// Should be fixed before the work is accepted.
        ShouldFix => "should-fix",
        /// Worth doing, but not a reason to send the work back on its own.
        NiceToHave => "nice-to-have",
    }
}

impl Severity {
    const fn rank(self) -> u8 {
        match self {
            Severity::Block => 2,
            Severity::ShouldFix => 1,
            Severity::NiceToHave => 0,
        }
    }

    /// The strongest severity of several (a merged group's severity), or
    /// `None` for none.
    pub fn strongest(severities: impl IntoIterator<Item = Severity>) -> Option<Severity> {
        severities.into_iter().max()
    }
}

impl PartialOrd for Severity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Severity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank().cmp(&other.rank())
    }
}

word_enum! {
    /// A reviewer's decision on the work.
    pub enum Decision {
        /// The work is acceptable as it is.
        Pass => "pass",
        /// The work should change first.
        Revise => "revise",
    }
}

impl Decision {
    /// The severity of a finding that names none: `nice-to-have`
    /// from a passing reviewer, `should-fix` from a revising one.
    pub const fn default_severity(self) -> Severity {
        match self {
            Decision::Pass => Severity::NiceToHave,
            Decision::Revise => Severity::ShouldFix,
        }
    }
}

word_enum! {
    /// The goal check's verdict on one requirement.
    pub enum Verdict {
        /// The work meets the requirement.
        Met => "met",
        /// The work does not meet it yet.
        Unmet => "unmet",
    }
}

word_enum! {
    /// A reviewer's vote on another reviewer's finding.
    pub enum VoteKind {
        /// The finding stands.
        Agree => "agree",
        /// The finding is wrong or not worth raising.
        Disagree => "disagree",
        /// The finding stands, with the voter's fix in place of its own.
        BetterFix => "better-fix",
    }
}

word_enum! {
    /// The judge's decision on one finding.
    pub enum JudgeAct {
        /// Send the finding to the builder.
        Act => "act",
        /// Leave it; the next round's reviewers are told why.
        Skip => "skip",
    }
}

/// One finding as a reviewer wrote it, before it is numbered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawFinding {
    /// The severity the reviewer gave, if any; see
    /// [`RawFinding::severity_or_default`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    /// What is wrong, and where.
    pub evidence: String,
    /// What to do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl RawFinding {
    /// The finding's severity, or the default for the reviewer's decision.
    pub fn severity_or_default(&self, decision: Decision) -> Severity {
        self.severity.unwrap_or(decision.default_severity())
    }
}

/// A `review` reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewReply {
    /// Pass or revise.
    pub decision: Decision,
    /// The problems raised; notes when the decision is pass.
    pub findings: Vec<RawFinding>,
}

/// The goal check's verdict on one requirement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequirementVerdict {
    /// The requirement, in the checker's words.
    pub requirement: String,
    /// Met or unmet.
    pub verdict: Verdict,
    /// A file and line, or a test; for unmet, what is missing.
    pub evidence: String,
}

/// A `goal` reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoalReply {
    /// One verdict per requirement; never empty.
    pub requirements: Vec<RequirementVerdict>,
}

/// One group of raw findings that name the same problem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeGroup {
    /// Raw finding ids (`write-1.1`); never empty.
    pub members: Vec<String>,
    /// The problem, in the merger's words.
    pub evidence: String,
    /// What to do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// A `merge` reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeReply {
    /// The groups, in merge order (they become `F1..Fn`).
    pub findings: Vec<MergeGroup>,
}

/// One reviewer's vote on one merged finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vote {
    /// The merged finding's id (`F1`).
    pub finding: String,
    /// Agree, disagree or better-fix.
    pub vote: VoteKind,
    /// Why.
    pub reason: String,
    /// The better fix; always present for a `better-fix` vote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// A `vote` reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoteReply {
    /// One vote per finding voted on.
    pub votes: Vec<Vote>,
}

/// The judge's decision on one finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgeDecision {
    /// The finding's id (`F1`).
    pub finding: String,
    /// Act or skip.
    pub decision: JudgeAct,
    /// A one-line reason, shown to the builder or the next reviewers.
    pub reason: String,
}

/// The judge's answer to one question: a probability, a choice or text, or
/// a boolean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AnswerValue {
    /// A boolean question's answer.
    Bool(bool),
    /// A number (probabilities are in 0..=1; the runtime checks the range).
    Number(f64),
    /// A choice or free text.
    Text(String),
}

impl AnswerValue {
    /// The number, if this answer is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            AnswerValue::Number(n) => Some(*n),
            _ => None,
        }
    }

    /// The text, if this answer is text.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            AnswerValue::Text(s) => Some(s),
            _ => None,
        }
    }

    /// The boolean, if this answer is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            AnswerValue::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

/// A `judge` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeReply {
    /// Answers by question name (`holds`, `stop_reason`, ...).
    pub answers: BTreeMap<String, AnswerValue>,
    /// Decisions on findings; a finding not mentioned is acted on.
    pub findings: Vec<JudgeDecision>,
}

/// One thing wrong with a reply's object: a JSON path and what to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    /// The JSON path, e.g. `findings[1].severity`.
    pub path: String,
    /// The rest of the sentence, e.g. `is "major"; write one of "block", ...`.
    pub problem: String,
}

impl fmt::Display for FieldProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` {}", self.path, self.problem)
    }
}

/// What was wrong with a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolProblem {
    /// No JSON object could be read from the text.
    Unreadable(ReplyError),
    /// The object did not fit the protocol; never empty.
    Mismatch(Vec<FieldProblem>),
}

impl fmt::Display for ProtocolProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolProblem::Unreadable(err) => write!(f, "{err}"),
            ProtocolProblem::Mismatch(problems) => {
                f.write_str("Your reply's JSON object did not fit:")?;
                for problem in problems.iter().take(MAX_LISTED_PROBLEMS) {
                    write!(f, " {problem}.")?;
                }
                match problems.len().saturating_sub(MAX_LISTED_PROBLEMS) {
                    0 => Ok(()),
                    1 => f.write_str(" There is 1 more problem like these."),
                    more => write!(f, " There are {more} more problems like these."),
                }
            }
        }
    }
}

/// A reply that does not follow its protocol.
///
/// `Display` is a line for logs and the record (`review reply: ...`);
/// [`ProtocolError::note`] is what to send back to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{protocol} reply: {problem}")]
pub struct ProtocolError {
    /// The protocol's name ([`Protocol::NAME`]).
    pub protocol: &'static str,
    /// The shape the protocol expects ([`Protocol::SHAPE`]).
    pub shape: &'static str,
    /// What was wrong.
    pub problem: ProtocolProblem,
}

impl ProtocolError {
    fn new<P: Protocol>(problem: ProtocolProblem) -> ProtocolError {
        ProtocolError { protocol: P::NAME, shape: P::SHAPE, problem }
    }

    /// The note for the "ask once more" turn: what was wrong, then the
    /// shape to reply with.
    pub fn note(&self) -> String {
        format!("{} Reply with one JSON object of this shape: {}", self.problem, self.shape)
    }

    /// Whether no JSON object could be read at all (as opposed to an object
    /// that did not fit).
    pub fn is_unreadable(&self) -> bool {
        matches!(self.problem, ProtocolProblem::Unreadable(_))
    }
}

/// A structured reply protocol (one request kind's reply shape).
pub trait Protocol: Sized {
    /// The request kind this protocol answers.
    const KIND: RequestKind;
    /// The protocol's name, as notes and logs say it.
    const NAME: &'static str = Self::KIND.as_str();
    /// The JSON shape expected, as shown to the model in notes.
    const SHAPE: &'static str;

    /// Checks an object already read from a reply.
    fn from_object(object: &Map<String, Value>) -> Result<Self, ProtocolError>;

    /// Reads a reply's text: its first JSON object, checked.
    fn parse(text: &str) -> Result<Self, ProtocolError> {
        let object = first_json_object(text)
            .map_err(|err| ProtocolError::new::<Self>(ProtocolProblem::Unreadable(err)))?;
        Self::from_object(&object)
    }
}

/// Reads a reply's text as protocol `P` (`parse::<ReviewReply>(text)`).
pub fn parse<P: Protocol>(text: &str) -> Result<P, ProtocolError> {
    P::parse(text)
}

impl Protocol for ReviewReply {
    const KIND: RequestKind = RequestKind::Review;
    const SHAPE: &'static str = r#"{"decision": "pass" | "revise", "findings": [{"severity": "block" | "should-fix" | "nice-to-have", "evidence": "<what is wrong, and where>", "fix": "<what to do (optional)>"}]}"#;

    fn from_object(object: &Map<String, Value>) -> Result<Self, ProtocolError> {
        let mut r = Reader::default();
        let root = Path::root();
        let decision = r.word::<Decision>(object, &root, "decision", Need::Required);
        let items = r.list(object, &root, "findings", "findings", Need::Optional);
        let findings: Vec<RawFinding> = items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| {
                let path = root.key("findings").index(i);
                let finding = r.object(item, &path, "a finding {\"severity\": ..., \"evidence\": ...}")?;
                Some(RawFinding {
                    severity: r.word::<Severity>(finding, &path, "severity", Need::Optional),
                    evidence: r.text(finding, &path, "evidence", "what is wrong, and where"),
                    fix: r.optional_text(finding, &path, "fix"),
                })
            })
            .collect();
        if decision == Some(Decision::Revise) && items.is_empty() && r.problems.is_empty() {
            r.problem(
                &root.key("findings"),
                "is empty but `decision` is \"revise\"; list what must change, or write \"pass\"",
            );
        }
        r.finish::<Self>()?;
        Ok(ReviewReply { decision: decision.unwrap_or(Decision::Revise), findings })
    }
}

impl Protocol for GoalReply {
    const KIND: RequestKind = RequestKind::Goal;
    const SHAPE: &'static str = r#"{"requirements": [{"requirement": "<the requirement>", "verdict": "met" | "unmet", "evidence": "<a file and line, or a test; for unmet, what is missing>"}]}"#;

    fn from_object(object: &Map<String, Value>) -> Result<Self, ProtocolError> {
        let mut r = Reader::default();
        let root = Path::root();
        let present = object.get("requirements").is_some_and(|v| !v.is_null());
        let items = r.list(object, &root, "requirements", "requirements", Need::Required);
        if present && items.is_empty() && r.problems.is_empty() {
            r.problem(&root.key("requirements"), "is empty; list every requirement with its verdict");
        }
        let requirements: Vec<RequirementVerdict> = items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| {
                let path = root.key("requirements").index(i);
                let req = r.object(item, &path, "a requirement {\"requirement\": ..., \"verdict\": ...}")?;
                let requirement = r.text(req, &path, "requirement", "the requirement");
                let verdict = r.word::<Verdict>(req, &path, "verdict", Need::Required);
                let evidence =
                    r.text(req, &path, "evidence", "a file and line, or a test; for unmet, what is missing");
                Some(RequirementVerdict { requirement, verdict: verdict.unwrap_or(Verdict::Unmet), evidence })
            })
            .collect();
        r.finish::<Self>()?;
        Ok(GoalReply { requirements })
    }
}

impl Protocol for MergeReply {
    const KIND: RequestKind = RequestKind::Merge;
    const SHAPE: &'static str = r#"{"findings": [{"members": ["<raw finding id, e.g. write-1.1>", "..."], "evidence": "<the problem they share>", "fix": "<what to do (optional)>"}]}"#;

    fn from_object(object: &Map<String, Value>) -> Result<Self, ProtocolError> {
        let mut r = Reader::default();
        let root = Path::root();
        let items = r.list(object, &root, "findings", "groups of findings", Need::Required);
        let findings: Vec<MergeGroup> = items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| {
                let path = root.key("findings").index(i);
                let group = r.object(item, &path, "a group {\"members\": [...], \"evidence\": ...}")?;
                let members_path = path.key("members");
                let listed = r.list(group, &path, "members", "raw finding ids", Need::Required);
                if group.get("members").is_some_and(Value::is_array) && listed.is_empty() {
                    r.problem(&members_path, "is empty; list the ids of the raw findings in this group");
                }
                let members = listed
                    .iter()
                    .enumerate()
                    .filter_map(|(m, member)| {
                        r.id(member, &members_path.index(m), "a raw finding id such as \"write-1.1\"")
                    })
                    .collect();
                Some(MergeGroup {
                    members,
                    evidence: r.text(group, &path, "evidence", "the problem the group's findings share"),
                    fix: r.optional_text(group, &path, "fix"),
                })
            })
            .collect();
        r.finish::<Self>()?;
        Ok(MergeReply { findings })
    }
}

impl Protocol for VoteReply {
    const KIND: RequestKind = RequestKind::Vote;
    const SHAPE: &'static str = r#"{"votes": [{"finding": "F1", "vote": "agree" | "disagree" | "better-fix", "reason": "<why>", "fix": "<your better fix (required for better-fix)>"}]}"#;

    fn from_object(object: &Map<String, Value>) -> Result<Self, ProtocolError> {
        let mut r = Reader::default();
        let root = Path::root();
        let items = r.list(object, &root, "votes", "votes", Need::Required);
        let votes: Vec<Vote> = items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| {
                let path = root.key("votes").index(i);
                let v = r.object(item, &path, "a vote {\"finding\": ..., \"vote\": ..., \"reason\": ...}")?;
                let finding = r.required_id(v, &path, "finding", "the finding's id, such as \"F1\"");
                let vote = r.word::<VoteKind>(v, &path, "vote", Need::Required);
                let reason = r.text(v, &path, "reason", "why you vote so");
                let fix = r.optional_text(v, &path, "fix");
                if vote == Some(VoteKind::BetterFix) && fix.is_none() && !has_bad_type(v, "fix") {
                    r.problem(
                        &path.key("fix"),
                        "is missing; a \"better-fix\" vote must give the better fix as a string",
                    );
                }
                Some(Vote { finding, vote: vote.unwrap_or(VoteKind::Agree), reason, fix })
            })
            .collect();
        r.finish::<Self>()?;
        Ok(VoteReply { votes })
    }
}

impl Protocol for JudgeReply {
    const KIND: RequestKind = RequestKind::Judge;
    const SHAPE: &'static str = r#"{"answers": {"<question>": <number | "string" | true/false>}, "findings": [{"finding": "F1", "decision": "act" | "skip", "reason": "<one line>"}]}"#;

    fn from_object(object: &Map<String, Value>) -> Result<Self, ProtocolError> {
        let mut r = Reader::default();
        let root = Path::root();
        let answers_path = root.key("answers");
        let mut answers = BTreeMap::new();
        match object.get("answers") {
            None | Some(Value::Null) => {
                r.problem(&answers_path, "is missing; write an object with your answer to each question");
            }
            Some(Value::Object(given)) => {
                for (question, value) in given {
                    let answer = match value {
                        Value::Bool(b) => Some(AnswerValue::Bool(*b)),
                        Value::Number(n) => n.as_f64().map(AnswerValue::Number),
                        Value::String(s) => Some(AnswerValue::Text(s.clone())),
                        Value::Null | Value::Array(_) | Value::Object(_) => None,
                    };
                    match answer {
                        Some(answer) => {
                            answers.insert(question.clone(), answer);
                        }
                        None => r.problem(
                            &answers_path.key(question),
                            &format!("is {}; write a number, a \"string\" or true/false", describe(value)),
                        ),
                    }
                }
            }
            Some(other) => r.problem(
                &answers_path,
                &format!("is {}; write an object {{\"<question>\": <answer>}}", describe(other)),
            ),
        }
        let items = r.list(object, &root, "findings", "decisions on findings", Need::Optional);
        let findings: Vec<JudgeDecision> = items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| {
                let path = root.key("findings").index(i);
                let d = r.object(
                    item,
                    &path,
                    "a decision {\"finding\": ..., \"decision\": ..., \"reason\": ...}",
                )?;
                let finding = r.required_id(d, &path, "finding", "the finding's id, such as \"F1\"");
                let decision = r.word::<JudgeAct>(d, &path, "decision", Need::Required);
                let reason = r.text(d, &path, "reason", "a one-line reason");
                Some(JudgeDecision { finding, decision: decision.unwrap_or(JudgeAct::Act), reason })
            })
            .collect();
        r.finish::<Self>()?;
        Ok(JudgeReply { answers, findings })
    }
}

/// Whether `key` is present with a value of the wrong type (already reported).
fn has_bad_type(object: &Map<String, Value>, key: &str) -> bool {
    object.get(key).is_some_and(|v| !matches!(v, Value::Null | Value::String(_)))
}

/// A JSON path for notes: `findings[1].severity`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Path(String);

impl Path {
    fn root() -> Path {
        Path(String::new())
    }

    fn key(&self, key: &str) -> Path {
        let plain = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        let quoted = serde_json::to_string(key).unwrap_or_default();
        Path(match (self.0.is_empty(), plain) {
            (true, true) => key.to_owned(),
            (false, true) => format!("{}.{key}", self.0),
            (_, false) => format!("{}[{quoted}]", self.0),
        })
    }

    fn index(&self, i: usize) -> Path {
        Path(format!("{}[{i}]", self.0))
    }
}

/// Whether a field must be present.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    Required,
    Optional,
}

/// A value as a note names it: `"major"`, `3`, `null`, `a list`.
fn describe(value: &Value) -> String {
    const MAX_CHARS: usize = 40;
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if s.trim().is_empty() => "empty".to_owned(),
        Value::String(s) if s.chars().count() > MAX_CHARS => {
            let head: String = s.chars().take(MAX_CHARS).collect();
            let quoted = serde_json::to_string(&head).unwrap_or_default();
            format!("{}...\"", quoted.strip_suffix('"').unwrap_or(&quoted))
        }
        Value::String(s) => serde_json::to_string(s).unwrap_or_default(),
        Value::Array(_) => "a list".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

/// Checks fields, collecting every problem so one note can list them all.
/// Its getters return a stand-in value after recording a problem; the
/// stand-ins are never seen, because [`Reader::finish`] then fails.
#[derive(Debug, Default)]
struct Reader {
    problems: Vec<FieldProblem>,
}

impl Reader {
    fn problem(&mut self, path: &Path, problem: &str) {
        self.problems.push(FieldProblem { path: path.0.clone(), problem: problem.to_owned() });
    }

    fn finish<P: Protocol>(&mut self) -> Result<(), ProtocolError> {
        if self.problems.is_empty() {
            Ok(())
        } else {
            Err(ProtocolError::new::<P>(ProtocolProblem::Mismatch(std::mem::take(&mut self.problems))))
        }
    }

    fn object<'v>(&mut self, value: &'v Value, path: &Path, what: &str) -> Option<&'v Map<String, Value>> {
        if let Value::Object(map) = value {
            Some(map)
        } else {
            self.problem(path, &format!("is {}; write {what}", describe(value)));
            None
        }
    }

    /// A list field; missing or `null` is an empty list when optional.
    fn list<'v>(
        &mut self,
        object: &'v Map<String, Value>,
        at: &Path,
        key: &str,
        of_what: &str,
        need: Need,
    ) -> &'v [Value] {
        let path = at.key(key);
        match object.get(key) {
            Some(Value::Array(items)) => items,
            None | Some(Value::Null) if need == Need::Optional => &[],
            None => {
                self.problem(&path, &format!("is missing; write a list [...] of {of_what}"));
                &[]
            }
            Some(other) => {
                self.problem(&path, &format!("is {}; write a list [...] of {of_what}", describe(other)));
                &[]
            }
        }
    }

    fn word<W: Word>(&mut self, object: &Map<String, Value>, at: &Path, key: &str, need: Need) -> Option<W> {
        let path = at.key(key);
        match object.get(key) {
            Some(Value::String(s)) => {
                let word = W::from_loose(s);
                if word.is_none() {
                    self.problem(
                        &path,
                        &format!("is {}; write {}", describe(&Value::String(s.clone())), W::choices()),
                    );
                }
                word
            }
            None | Some(Value::Null) if need == Need::Optional => None,
            None => {
                self.problem(&path, &format!("is missing; write {}", W::choices()));
                None
            }
            Some(other) => {
                self.problem(&path, &format!("is {}; write {}", describe(other), W::choices()));
                None
            }
        }
    }

    /// Required, non-blank text.
    fn text(&mut self, object: &Map<String, Value>, at: &Path, key: &str, what: &str) -> String {
        let path = at.key(key);
        match object.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            None => {
                self.problem(&path, &format!("is missing; write a string: {what}"));
                String::new()
            }
            Some(other) => {
                self.problem(&path, &format!("is {}; write a string: {what}", describe(other)));
                String::new()
            }
        }
    }

    /// Optional text: absent, `null` and blank are `None`.
    fn optional_text(&mut self, object: &Map<String, Value>, at: &Path, key: &str) -> Option<String> {
        match object.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.trim().is_empty() => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                self.problem(
                    &at.key(key),
                    &format!("is {}; write a string, or leave it out", describe(other)),
                );
                None
            }
        }
    }

    /// An id inside a list (a merge group's member).
    fn id(&mut self, value: &Value, path: &Path, what: &str) -> Option<String> {
        match value {
            Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
            other => {
                self.problem(path, &format!("is {}; write {what}", describe(other)));
                None
            }
        }
    }

    /// A required id field (`finding`), trimmed.
    fn required_id(&mut self, object: &Map<String, Value>, at: &Path, key: &str, what: &str) -> String {
        if let Some(value) = object.get(key) {
            self.id(value, &at.key(key), what).unwrap_or_default()
        } else {
            self.problem(&at.key(key), &format!("is missing; write {what}"));
            String::new()
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    fn problems(err: &ProtocolError) -> Vec<String> {
        match &err.problem {
            ProtocolProblem::Mismatch(list) => list.iter().map(ToString::to_string).collect(),
            ProtocolProblem::Unreadable(e) => vec![format!("unreadable: {e}")],
        }
    }

    fn review_problems(text: &str) -> Vec<String> {
        problems(&ReviewReply::parse(text).unwrap_err())
    }

    #[test]
    fn severities_order_by_strength() {
        assert!(Severity::Block > Severity::ShouldFix);
        assert!(Severity::ShouldFix > Severity::NiceToHave);
        assert_eq!(
            Severity::strongest([Severity::NiceToHave, Severity::Block, Severity::ShouldFix]),
            Some(Severity::Block)
        );
        assert_eq!(Severity::strongest([]), None);
        assert_eq!(Severity::ShouldFix.to_string(), "should-fix");
        assert_eq!(serde_json::to_string(&Severity::NiceToHave).unwrap(), "\"nice-to-have\"");
        assert_eq!(serde_json::to_string(&VoteKind::BetterFix).unwrap(), "\"better-fix\"");
        assert_eq!(serde_json::from_str::<Decision>("\"revise\"").unwrap(), Decision::Revise);
    }

    #[test]
    fn review_good() {
        let text = r#"Looks fine mostly.
```json
{"decision": "revise", "findings": [
  {"severity": "block", "evidence": "a.rs:3 panics on empty input", "fix": "return an error"},
  {"evidence": "typo in README", "fix": ""},
  {"severity": "Should_Fix", "evidence": "x", "confidence": 0.9}
], "summary": "extra fields are fine"}
```"#;
        assert_eq!(
            ReviewReply::parse(text),
            Ok(ReviewReply {
                decision: Decision::Revise,
                findings: vec![
                    RawFinding {
                        severity: Some(Severity::Block),
                        evidence: "a.rs:3 panics on empty input".to_owned(),
                        fix: Some("return an error".to_owned()),
                    },
                    RawFinding { severity: None, evidence: "typo in README".to_owned(), fix: None },
                    RawFinding { severity: Some(Severity::ShouldFix), evidence: "x".to_owned(), fix: None },
                ],
            })
        );
        assert_eq!(
            ReviewReply::parse(r#"{"decision":"pass"}"#),
            Ok(ReviewReply { decision: Decision::Pass, findings: vec![] })
        );
        assert_eq!(
            ReviewReply::parse(r#"{"decision":" PASS ","findings":null}"#),
            Ok(ReviewReply { decision: Decision::Pass, findings: vec![] })
        );
    }

    #[test]
    fn default_severity_follows_the_decision() {
        let finding = RawFinding { severity: None, evidence: "e".to_owned(), fix: None };
        assert_eq!(finding.severity_or_default(Decision::Pass), Severity::NiceToHave);
        assert_eq!(finding.severity_or_default(Decision::Revise), Severity::ShouldFix);
    }

    #[test]
    fn review_bad() {
        assert_eq!(
            review_problems(
                r#"{"decision":"revise","findings":[{"severity":"block","evidence":"a"},{"severity":"major","evidence":"b"}]}"#
            ),
            vec![r#"`findings[1].severity` is "major"; write one of "block", "should-fix", "nice-to-have""#]
        );
        assert_eq!(
            review_problems(r#"{"findings":[]}"#),
            vec![r#"`decision` is missing; write "pass" or "revise""#]
        );
        assert_eq!(
            review_problems(r#"{"decision":"revise","findings":[]}"#),
            vec![r#"`findings` is empty but `decision` is "revise"; list what must change, or write "pass""#]
        );
        assert_eq!(
            review_problems(r#"{"decision":"approve","findings":{"a":1}}"#),
            vec![
                r#"`decision` is "approve"; write "pass" or "revise""#,
                "`findings` is an object; write a list [...] of findings",
            ]
        );
        assert_eq!(
            review_problems(r#"{"decision":"pass","findings":["bad", {"evidence":"  ","fix":3}, {}]}"#),
            vec![
                r#"`findings[0]` is "bad"; write a finding {"severity": ..., "evidence": ...}"#,
                "`findings[1].evidence` is empty; write a string: what is wrong, and where",
                "`findings[1].fix` is 3; write a string, or leave it out",
                "`findings[2].evidence` is missing; write a string: what is wrong, and where",
            ]
        );
        assert_eq!(
            review_problems(r#"{"decision":true}"#),
            vec![r#"`decision` is true; write "pass" or "revise""#]
        );
    }

    #[test]
    fn notes_carry_the_problem_and_the_shape() {
        let err = ReviewReply::parse(r#"{"decision":"ok"}"#).unwrap_err();
        assert_eq!(
            err.note(),
            format!(
                "Your reply's JSON object did not fit: `decision` is \"ok\"; write \"pass\" or \"revise\". Reply with one JSON object of this shape: {}",
                ReviewReply::SHAPE
            )
        );
        assert_eq!(
            err.to_string(),
            "review reply: Your reply's JSON object did not fit: `decision` is \"ok\"; write \"pass\" or \"revise\"."
        );
        assert!(!err.is_unreadable());

        let err = ReviewReply::parse("I think it passes.").unwrap_err();
        assert!(err.is_unreadable());
        assert_eq!(
            err.note(),
            format!(
                "Your reply had no JSON object. Reply with one JSON object of this shape: {}",
                ReviewReply::SHAPE
            )
        );
    }

    #[test]
    fn long_lists_of_problems_are_cut() {
        let findings: Vec<String> = (0..9).map(|_| "{}".to_owned()).collect();
        let text = format!(r#"{{"decision":"pass","findings":[{}]}}"#, findings.join(","));
        let err = ReviewReply::parse(&text).unwrap_err();
        assert_eq!(problems(&err).len(), 9);
        assert!(err.note().contains("There are 3 more problems like these."));
        assert!(err.note().contains("`findings[5].evidence` is missing"));
        assert!(!err.note().contains("`findings[6].evidence`"));
    }

    #[test]
    fn long_strings_are_shortened_in_notes() {
        let long = "m".repeat(100);
        let problems = review_problems(&format!(r#"{{"decision":"{long}"}}"#));
        assert_eq!(
            problems,
            vec![format!(r#"`decision` is "{}..."; write "pass" or "revise""#, "m".repeat(40))]
        );
    }

    #[test]
    fn goal_good_and_bad() {
        let text = r#"{"requirements":[{"requirement":"Lists the opening hours","verdict":"unmet","evidence":"welcome.md has no opening hours"},{"requirement":"Says who it is for","verdict":"Met","evidence":"welcome.md:2"}]}"#;
        assert_eq!(
            GoalReply::parse(text),
            Ok(GoalReply {
                requirements: vec![
                    RequirementVerdict {
                        requirement: "Lists the opening hours".to_owned(),
                        verdict: Verdict::Unmet,
                        evidence: "welcome.md has no opening hours".to_owned(),
                    },
                    RequirementVerdict {
                        requirement: "Says who it is for".to_owned(),
                        verdict: Verdict::Met,
                        evidence: "welcome.md:2".to_owned(),
                    },
                ],
            })
        );
        let bad = |text: &str| problems(&GoalReply::parse(text).unwrap_err());
        assert_eq!(
            bad(r#"{"requirements":"all met"}"#),
            vec![r#"`requirements` is "all met"; write a list [...] of requirements"#]
        );
        assert_eq!(
            bad(r#"{"verdict":"met"}"#),
            vec!["`requirements` is missing; write a list [...] of requirements"]
        );
        assert_eq!(
            bad(r#"{"requirements":[]}"#),
            vec!["`requirements` is empty; list every requirement with its verdict"]
        );
        assert_eq!(
            bad(r#"{"requirements":[{"requirement":"","verdict":"partly","evidence":null}]}"#),
            vec![
                "`requirements[0].requirement` is empty; write a string: the requirement",
                r#"`requirements[0].verdict` is "partly"; write "met" or "unmet""#,
                "`requirements[0].evidence` is null; write a string: a file and line, or a test; for unmet, what is missing",
            ]
        );
    }

    #[test]
    fn merge_good_and_bad() {
        let text = r#"{"findings":[{"members":["write-1.1"," write-2.1 "],"evidence":"both say the retry is unbounded","fix":"cap it"},{"members":["write-2.2"],"evidence":"typo"}]}"#;
        assert_eq!(
            MergeReply::parse(text),
            Ok(MergeReply {
                findings: vec![
                    MergeGroup {
                        members: vec!["write-1.1".to_owned(), "write-2.1".to_owned()],
                        evidence: "both say the retry is unbounded".to_owned(),
                        fix: Some("cap it".to_owned()),
                    },
                    MergeGroup {
                        members: vec!["write-2.2".to_owned()],
                        evidence: "typo".to_owned(),
                        fix: None
                    },
                ],
            })
        );
        assert_eq!(MergeReply::parse(r#"{"findings":[]}"#), Ok(MergeReply { findings: vec![] }));
        let bad = |text: &str| problems(&MergeReply::parse(text).unwrap_err());
        assert_eq!(
            bad(
                r#"{"findings":[{"members":[],"evidence":"x"},{"members":"write-1.1","evidence":"y"},{"members":["write-1.1",2,""],"evidence":"z"}]}"#
            ),
            vec![
                "`findings[0].members` is empty; list the ids of the raw findings in this group",
                r#"`findings[1].members` is "write-1.1"; write a list [...] of raw finding ids"#,
                r#"`findings[2].members[1]` is 2; write a raw finding id such as "write-1.1""#,
                r#"`findings[2].members[2]` is empty; write a raw finding id such as "write-1.1""#,
            ]
        );
        assert_eq!(
            bad(r#"{"groups":[]}"#),
            vec!["`findings` is missing; write a list [...] of groups of findings"]
        );
    }

    #[test]
    fn vote_good_and_bad() {
        let text = r#"{"votes":[{"finding":"F1","vote":"agree","reason":"right"},{"finding":"F2","vote":"better fix","reason":"simpler","fix":"use a loop"},{"finding":"F3","vote":"DISAGREE","reason":"not a bug","fix":null}]}"#;
        assert_eq!(
            VoteReply::parse(text),
            Ok(VoteReply {
                votes: vec![
                    Vote {
                        finding: "F1".to_owned(),
                        vote: VoteKind::Agree,
                        reason: "right".to_owned(),
                        fix: None
                    },
                    Vote {
                        finding: "F2".to_owned(),
                        vote: VoteKind::BetterFix,
                        reason: "simpler".to_owned(),
                        fix: Some("use a loop".to_owned()),
                    },
                    Vote {
                        finding: "F3".to_owned(),
                        vote: VoteKind::Disagree,
                        reason: "not a bug".to_owned(),
                        fix: None
                    },
                ],
            })
        );
        let bad = |text: &str| problems(&VoteReply::parse(text).unwrap_err());
        assert_eq!(
            bad(
                r#"{"votes":[{"finding":"F1","vote":"better-fix","reason":"r"},{"finding":1,"vote":"yes"},{"finding":"F3","vote":"better-fix","reason":"r","fix":["a"]}]}"#
            ),
            vec![
                r#"`votes[0].fix` is missing; a "better-fix" vote must give the better fix as a string"#,
                r#"`votes[1].finding` is 1; write the finding's id, such as "F1""#,
                r#"`votes[1].vote` is "yes"; write one of "agree", "disagree", "better-fix""#,
                "`votes[1].reason` is missing; write a string: why you vote so",
                "`votes[2].fix` is a list; write a string, or leave it out",
            ]
        );
        assert_eq!(bad(r#"{"votes":null}"#), vec!["`votes` is null; write a list [...] of votes"]);
    }

    #[test]
    fn judge_good_and_bad() {
        let text = r#"{"answers":{"holds":0.3,"worth_doing":1,"stop_reason":"continue","ship it?":true},"findings":[{"finding":"F1","decision":"act","reason":"real bug"},{"finding":"F2","decision":"Skip","reason":"style"}]}"#;
        let mut answers = BTreeMap::new();
        answers.insert("holds".to_owned(), AnswerValue::Number(0.3));
        answers.insert("worth_doing".to_owned(), AnswerValue::Number(1.0));
        answers.insert("stop_reason".to_owned(), AnswerValue::Text("continue".to_owned()));
        answers.insert("ship it?".to_owned(), AnswerValue::Bool(true));
        assert_eq!(
            JudgeReply::parse(text),
            Ok(JudgeReply {
                answers,
                findings: vec![
                    JudgeDecision {
                        finding: "F1".to_owned(),
                        decision: JudgeAct::Act,
                        reason: "real bug".to_owned()
                    },
                    JudgeDecision {
                        finding: "F2".to_owned(),
                        decision: JudgeAct::Skip,
                        reason: "style".to_owned()
                    },
                ],
            })
        );
        assert_eq!(
            JudgeReply::parse(r#"{"answers":{}}"#),
            Ok(JudgeReply { answers: BTreeMap::new(), findings: vec![] })
        );
        let bad = |text: &str| problems(&JudgeReply::parse(text).unwrap_err());
        assert_eq!(
            bad(
                r#"{"answers":{"holds":null,"stop reason":[1]},"findings":[{"finding":"F1","decision":"maybe","reason":""}]}"#
            ),
            vec![
                "`answers.holds` is null; write a number, a \"string\" or true/false",
                "`answers[\"stop reason\"]` is a list; write a number, a \"string\" or true/false",
                r#"`findings[0].decision` is "maybe"; write "act" or "skip""#,
                "`findings[0].reason` is empty; write a string: a one-line reason",
            ]
        );
        assert_eq!(
            bad(r#"{"findings":[]}"#),
            vec!["`answers` is missing; write an object with your answer to each question"]
        );
        assert_eq!(
            bad(r#"{"answers":[0.5]}"#),
            vec!["`answers` is a list; write an object {\"<question>\": <answer>}"]
        );
    }

    #[test]
    fn answers_serialise_untagged() {
        let mut answers = BTreeMap::new();
        answers.insert("holds".to_owned(), AnswerValue::Number(0.5));
        answers.insert("stop_reason".to_owned(), AnswerValue::Text("holds".to_owned()));
        answers.insert("ok".to_owned(), AnswerValue::Bool(false));
        let reply = JudgeReply { answers, findings: vec![] };
        let json = serde_json::to_string(&reply).unwrap();
        assert_eq!(json, r#"{"answers":{"holds":0.5,"ok":false,"stop_reason":"holds"},"findings":[]}"#);
        assert_eq!(serde_json::from_str::<JudgeReply>(&json).unwrap(), reply);
        assert_eq!(reply.answers["holds"].as_f64(), Some(0.5));
        assert_eq!(reply.answers["stop_reason"].as_str(), Some("holds"));
        assert_eq!(reply.answers["ok"].as_bool(), Some(false));
    }

    #[test]
    fn names_match_request_kinds() {
        assert_eq!(ReviewReply::NAME, "review");
        assert_eq!(GoalReply::NAME, "goal");
        assert_eq!(MergeReply::NAME, "merge");
        assert_eq!(VoteReply::NAME, "vote");
        assert_eq!(JudgeReply::NAME, "judge");
        assert_eq!(parse::<VoteReply>(r#"{"votes":[]}"#), Ok(VoteReply { votes: vec![] }));
    }
}
