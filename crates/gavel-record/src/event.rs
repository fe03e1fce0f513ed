//! The envelope and the event kinds of the record, as types.
//!
//! Every line of a record is an [`Envelope`]: `{"v","seq","at","kind","data"}`.
//! `kind` and `data` come from [`Event`], an adjacently tagged enum, so the
//! typed fields live under `data` exactly as the spec pins them. Fields added
//! after the first release carry `#[serde(default)]` so older records read.

use std::collections::BTreeMap;

use gavel_domain::protocol::{JudgeAct, RequirementVerdict, VoteKind};
pub use gavel_domain::rules::{Finding, Route, VoteResult};
use gavel_domain::{RequestKind, Usage};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// One line of the record.
///
/// Generic over the event type so another log (a goal's record) can use the
/// same envelope, writer and reader with its own kinds; `E` defaults to the
/// run record's [`Event`], so run code never names it.
///
/// Deserialized by hand (see [`envelope_de`]): a derived `#[serde(flatten)]`
/// would buffer every line into an intermediate tree before building the
/// event, which made reading a long record four times slower.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Envelope<E = Event> {
    /// The record format's major version ([`crate::FORMAT_VERSION`]).
    pub v: u32,
    /// Position in the record, counting from 1 without gaps.
    pub seq: u64,
    /// When the event was written, RFC 3339 in UTC.
    pub at: Timestamp,
    /// The event: its `kind` and `data`.
    #[serde(flatten)]
    pub event: E,
}

mod flat {
    //! The seat events as they read: flat fields, because a derived
    //! `#[serde(flatten)]` reader buffers the whole object first, and these
    //! are most of a long record's lines.

    use gavel_domain::{RequestKind, Usage};
    use serde::Deserialize;

    #[derive(Deserialize)]
    pub(super) struct SeatRequest {
        stage: String,
        round: u32,
        seat: String,
        request: RequestKind,
        attempt: u32,
        prompt_sha256: String,
        #[serde(default)]
        note: Option<String>,
    }

    #[derive(Deserialize)]
    pub(super) struct SeatReply {
        stage: String,
        round: u32,
        seat: String,
        request: RequestKind,
        attempt: u32,
        text: String,
        #[serde(default)]
        usage: Usage,
        ms: u64,
        #[serde(default)]
        session: Option<String>,
    }

    #[derive(Deserialize)]
    pub(super) struct SeatError {
        stage: String,
        round: u32,
        seat: String,
        request: RequestKind,
        attempt: u32,
        error: String,
        #[serde(default)]
        ms: u64,
    }

    impl From<SeatRequest> for super::SeatRequest {
        fn from(f: SeatRequest) -> Self {
            let key = super::SeatKey {
                stage: f.stage,
                round: f.round,
                seat: f.seat,
                request: f.request,
                attempt: f.attempt,
            };
            Self { key, prompt_sha256: f.prompt_sha256, note: f.note }
        }
    }

    impl From<SeatReply> for super::SeatReply {
        fn from(f: SeatReply) -> Self {
            let key = super::SeatKey {
                stage: f.stage,
                round: f.round,
                seat: f.seat,
                request: f.request,
                attempt: f.attempt,
            };
            Self { key, text: f.text, usage: f.usage, ms: f.ms, session: f.session }
        }
    }

    impl From<SeatError> for super::SeatError {
        fn from(f: SeatError) -> Self {
            let key = super::SeatKey {
                stage: f.stage,
                round: f.round,
                seat: f.seat,
                request: f.request,
                attempt: f.attempt,
            };
            Self { key, error: f.error, ms: f.ms }
        }
    }
}

mod envelope_de {
    //! The envelope's reader: `v`, `seq` and `at` are taken out of the line's
    //! map as they pass, and every other entry streams on to the event type's
    //! own (adjacently tagged) deserializer, so nothing is buffered.

    use std::borrow::Cow;
    use std::fmt;
    use std::marker::PhantomData;

    use jiff::Timestamp;
    use serde::Deserialize;
    use serde::de::value::BorrowedStrDeserializer;
    use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};

    use super::Envelope;

    impl<'de, E: Deserialize<'de>> Deserialize<'de> for Envelope<E> {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_map(EnvelopeVisitor(PhantomData))
        }
    }

    struct EnvelopeVisitor<E>(PhantomData<E>);

    impl<'de, E: Deserialize<'de>> Visitor<'de> for EnvelopeVisitor<E> {
        type Value = Envelope<E>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an event object {\"v\",\"seq\",\"at\",\"kind\",\"data\"}")
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            let mut rest = Rest { map, v: None, seq: None, at: None };
            let event = E::deserialize(RestDeserializer(&mut rest))?;
            // An event's reader reads its map to the end; anything left over
            // is a field no event has.
            if let Some(key) = rest.next_own_key()? {
                return Err(de::Error::custom(format!("unexpected field `{}`", key.0)));
            }
            Ok(Envelope {
                v: rest.v.ok_or_else(|| de::Error::missing_field("v"))?,
                seq: rest.seq.ok_or_else(|| de::Error::missing_field("seq"))?,
                at: rest.at.ok_or_else(|| de::Error::missing_field("at"))?,
                event,
            })
        }
    }

    /// The line's map, with the envelope's own fields taken out as they pass.
    struct Rest<A> {
        map: A,
        v: Option<u32>,
        seq: Option<u64>,
        at: Option<Timestamp>,
    }

    impl<'de, A: MapAccess<'de>> Rest<A> {
        /// The next key that is not an envelope field, after storing any
        /// envelope fields on the way.
        fn next_own_key(&mut self) -> Result<Option<KeyName<'de>>, A::Error> {
            loop {
                let Some(key) = self.map.next_key::<KeyName<'de>>()? else {
                    return Ok(None);
                };
                match key.0.as_ref() {
                    "v" => self.v = Some(self.map.next_value()?),
                    "seq" => self.seq = Some(self.map.next_value()?),
                    "at" => self.at = Some(self.map.next_value()?),
                    _ => return Ok(Some(key)),
                }
            }
        }
    }

    /// A key, borrowed from the input when it can be.
    struct KeyName<'de>(Cow<'de, str>);

    impl<'de> Deserialize<'de> for KeyName<'de> {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct KeyVisitor;
            impl<'de> Visitor<'de> for KeyVisitor {
                type Value = KeyName<'de>;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a field name")
                }
                fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                    Ok(KeyName(Cow::Borrowed(v)))
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                    Ok(KeyName(Cow::Owned(v.to_owned())))
                }
                fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                    Ok(KeyName(Cow::Owned(v)))
                }
            }
            deserializer.deserialize_str(KeyVisitor)
        }
    }

    /// Hands the rest of the line to the event as a map of its own.
    struct RestDeserializer<'a, A>(&'a mut Rest<A>);

    impl<'de, A: MapAccess<'de>> Deserializer<'de> for RestDeserializer<'_, A> {
        type Error = A::Error;

        fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            visitor.visit_map(self)
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map struct enum identifier ignored_any
        }
    }

    impl<'de, A: MapAccess<'de>> MapAccess<'de> for RestDeserializer<'_, A> {
        type Error = A::Error;

        fn next_key_seed<K: DeserializeSeed<'de>>(
            &mut self,
            seed: K,
        ) -> Result<Option<K::Value>, Self::Error> {
            match self.0.next_own_key()? {
                Some(KeyName(Cow::Borrowed(key))) => {
                    seed.deserialize(BorrowedStrDeserializer::new(key)).map(Some)
                }
                Some(KeyName(Cow::Owned(key))) => seed.deserialize(key.into_deserializer()).map(Some),
                None => Ok(None),
            }
        }

        fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Self::Error> {
            self.0.map.next_value_seed(seed)
        }
    }
}

/// An event type a record can hold: the run record's [`Event`], or another
/// log's own kinds written in the same envelope under the same rules
///. Its serde form must be adjacently tagged as `kind` + `data`.
pub trait RecordEvent: Serialize + serde::de::DeserializeOwned + std::fmt::Debug + Clone + Send {
    /// Every kind this version of gavel knows, for "written by a newer
    /// gavel" messages.
    const KINDS: &'static [&'static str];

    /// The event's `kind` as written, for messages about it.
    fn kind_name(&self) -> &'static str;

    /// Whether a step counts as done once this event is written: its append
    /// is synced before the writer returns. Every event is, unless a kind
    /// says otherwise.
    fn completes_a_step(&self) -> bool {
        true
    }
}

impl RecordEvent for Event {
    const KINDS: &'static [&'static str] = &Event::KINDS;

    fn kind_name(&self) -> &'static str {
        self.kind()
    }

    /// Effect results (a seat's reply or error, a command's run, a job's
    /// result, a person's approval) and session markers complete a step and
    /// are synced. An intent (`seat:request`, `stage:start`) or an event
    /// derived from results already on record is appended without its own
    /// sync: a replay derives it again if a power cut loses it, and the next
    /// synced append makes it durable too, since a sync covers every earlier
    /// byte of the file.
    fn completes_a_step(&self) -> bool {
        !matches!(
            self,
            Event::StageStart(_)
                | Event::SeatRequest(_)
                | Event::BuildDone(_)
                | Event::GoalCheck(_)
                | Event::ReviewDecision(_)
                | Event::ReviewSynthesis(_)
                | Event::RefineJudge(_)
                | Event::Kickback(_)
                | Event::ApprovalRequest(_)
        )
    }
}

/// Every event kind a record may hold. Others may be added; none removed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "data")]
pub enum Event {
    /// A run began.
    #[serde(rename = "run:start")]
    RunStart(RunStart),
    /// A stage (or graph node) began a round.
    #[serde(rename = "stage:start")]
    StageStart(StageStart),
    /// A request was sent to a seat (an effect begins).
    #[serde(rename = "seat:request")]
    SeatRequest(SeatRequest),
    /// A seat answered (an effect's result).
    #[serde(rename = "seat:reply")]
    SeatReply(SeatReply),
    /// A seat failed to answer (an effect's result).
    #[serde(rename = "seat:error")]
    SeatError(SeatError),
    /// A builder's turn finished; the files it left, by digest.
    #[serde(rename = "build:done")]
    BuildDone(BuildDone),
    /// A command ran (a `run` stage or a gate).
    #[serde(rename = "check:run")]
    CheckRun(CheckRun),
    /// A custom job (a node written in Rust) finished.
    #[serde(rename = "job:done")]
    JobDone(JobDone),
    /// The goal check's verdict on every requirement.
    #[serde(rename = "goal:check")]
    GoalCheck(GoalCheck),
    /// One reviewer's decision.
    #[serde(rename = "review:decision")]
    ReviewDecision(ReviewDecision),
    /// A panel's merged findings and the votes on them.
    #[serde(rename = "review:synthesis")]
    ReviewSynthesis(ReviewSynthesis),
    /// The judge's route and decisions for a round.
    #[serde(rename = "refine:judge")]
    RefineJudge(RefineJudge),
    /// Work sent back from one stage to an earlier one.
    #[serde(rename = "kickback")]
    Kickback(Kickback),
    /// A person was asked to approve exact bytes.
    #[serde(rename = "approval:request")]
    ApprovalRequest(ApprovalRequest),
    /// A person's decision on an approval request.
    #[serde(rename = "approval")]
    Approval(Approval),
    /// The run stopped to wait for something.
    #[serde(rename = "run:pause")]
    RunPause(RunPause),
    /// A process took the run up again.
    #[serde(rename = "run:resume")]
    RunResume(RunResume),
    /// The run ended with a status.
    #[serde(rename = "run:end")]
    RunEnd(RunEnd),
}

impl Event {
    /// The event's `kind` string as written in the record.
    pub const fn kind(&self) -> &'static str {
        match self {
            Event::RunStart(_) => "run:start",
            Event::StageStart(_) => "stage:start",
            Event::SeatRequest(_) => "seat:request",
            Event::SeatReply(_) => "seat:reply",
            Event::SeatError(_) => "seat:error",
            Event::BuildDone(_) => "build:done",
            Event::CheckRun(_) => "check:run",
            Event::JobDone(_) => "job:done",
            Event::GoalCheck(_) => "goal:check",
            Event::ReviewDecision(_) => "review:decision",
            Event::ReviewSynthesis(_) => "review:synthesis",
            Event::RefineJudge(_) => "refine:judge",
            Event::Kickback(_) => "kickback",
            Event::ApprovalRequest(_) => "approval:request",
            Event::Approval(_) => "approval",
            Event::RunPause(_) => "run:pause",
            Event::RunResume(_) => "run:resume",
            Event::RunEnd(_) => "run:end",
        }
    }

    /// Every kind this version of gavel knows, for error messages.
    pub const KINDS: [&'static str; 18] = [
        "run:start",
        "stage:start",
        "seat:request",
        "seat:reply",
        "seat:error",
        "build:done",
        "check:run",
        "job:done",
        "goal:check",
        "review:decision",
        "review:synthesis",
        "refine:judge",
        "kickback",
        "approval:request",
        "approval",
        "run:pause",
        "run:resume",
        "run:end",
    ];
}

/// `run:start`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunStart {
    /// The run's id.
    pub run_id: String,
    /// The workflow's `name`.
    pub workflow: String,
    /// The workflow file's path, as given (absolute once resolved).
    pub file: String,
    /// SHA-256 over the workflow file and the brief, hex.
    pub digest: String,
    /// The workspace the run works in, absolute.
    #[serde(default)]
    pub workspace: String,
    /// The gavel version that started the run.
    #[serde(default)]
    pub gavel: String,
    /// The record's own path when the run started, absolute: where it lay
    /// in the workspace tells a resume of a copied workspace where the copy
    /// is, for a record kept outside `.gavel/`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub record: String,
    /// Stages that opted out of the diversity rule (`allow_same_family`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_same_family: Vec<String>,
}

/// `stage:start`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageStart {
    /// The stage or node name.
    pub stage: String,
    /// The round, from 1.
    pub round: u32,
}

/// The key every seat effect carries: which request of which seat, where.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SeatKey {
    /// The stage or node name.
    pub stage: String,
    /// The round, from 1.
    pub round: u32,
    /// The seat's name.
    pub seat: String,
    /// The request kind.
    pub request: RequestKind,
    /// 1 for the first ask, 2 for the "ask once more" turn, and so on.
    pub attempt: u32,
}

/// `seat:request`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "flat::SeatRequest")]
pub struct SeatRequest {
    /// Which request this is.
    #[serde(flatten)]
    pub key: SeatKey,
    /// SHA-256 of the prompt text, hex.
    pub prompt_sha256: String,
    /// An "ask once more" turn: why the last reply could not be used, as
    /// the note sent with this prompt says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `seat:reply`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "flat::SeatReply")]
pub struct SeatReply {
    /// Which request this answers.
    #[serde(flatten)]
    pub key: SeatKey,
    /// The reply text as the seat gave it.
    pub text: String,
    /// Tokens and cost of this request.
    #[serde(default)]
    pub usage: Usage,
    /// How long the request took, in milliseconds.
    pub ms: u64,
    /// The engine's session or thread id, when it reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

/// `seat:error`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "flat::SeatError")]
pub struct SeatError {
    /// Which request failed.
    #[serde(flatten)]
    pub key: SeatKey,
    /// What went wrong, without secrets.
    pub error: String,
    /// How long the request took before it failed, in milliseconds.
    #[serde(default)]
    pub ms: u64,
}

/// `build:done`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildDone {
    /// The stage that built.
    pub stage: String,
    /// The round.
    pub round: u32,
    /// Each file the stage writes that exists, with its SHA-256.
    pub files: BTreeMap<String, String>,
    /// Files the stage should have written that do not exist.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

/// `check:run`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRun {
    /// The stage that ran the command.
    pub stage: String,
    /// The round.
    pub round: u32,
    /// The command as argv, when given as a list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    /// The command as a shell line, when given as a string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
    /// The exit code; `None` when a signal ended it or it timed out.
    pub exit: Option<i32>,
    /// Whether the timeout ended it.
    pub timed_out: bool,
    /// How long it ran, in milliseconds.
    pub ms: u64,
    /// The last part of its combined output, without terminal escape
    /// sequences.
    pub output_tail: String,
    /// Whether `output_tail` holds less than the command printed (only its
    /// end was kept). Written only when true: a record without it kept all.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub output_truncated: bool,
    /// Why it could not start at all (a missing program, a bad folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The files earlier stages built, as the command left them, with their
    /// SHA-256 (a command may rewrite them, e.g. a formatter): resume checks
    /// the workspace against the latest state the record holds.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
    /// Those of them that did not exist after the command.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

/// `job:done`: how a custom job came out. Its result is an effect: a
/// resumed run reads it here instead of running the job again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobDone {
    /// The job's node.
    pub stage: String,
    /// The round.
    pub round: u32,
    /// `pass`, `send_back` or `fail`.
    pub status: String,
    /// What the job said.
    pub summary: String,
    /// Where a `send_back` goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The findings a `send_back` or `fail` carries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// How long it ran, in milliseconds.
    #[serde(default)]
    pub ms: u64,
}

/// `goal:check`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoalCheck {
    /// The stage whose work was checked.
    pub stage: String,
    /// The round.
    pub round: u32,
    /// Each requirement with its verdict and evidence.
    pub requirements: Vec<RequirementVerdict>,
}

/// A reviewer's recorded decision: a reply's decision, or an engine error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReviewOutcome {
    /// The reviewer accepts the work.
    Pass,
    /// The reviewer asks for a revision.
    Revise,
    /// No readable decision: neither an acceptance nor a rejection.
    Error,
}

/// `review:decision`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewDecision {
    /// The stage under review.
    pub stage: String,
    /// The round.
    pub round: u32,
    /// The reviewer's name (`write-1`, ...).
    pub reviewer: String,
    /// Its decision.
    pub decision: ReviewOutcome,
    /// Its raw findings.
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// The attempt whose reply (or last failure) this decision rests on; a
    /// reviewer asked again after a pause gets a new decision.
    #[serde(default = "one")]
    pub attempt: u32,
    /// The seat that reviewed (empty in records from before it was written).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub seat: String,
    /// Why the decision is `error`: the last failure (an engine error, or
    /// why its reply could not be used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn one() -> u32 {
    1
}

/// One vote on a merged finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedVote {
    /// Who voted.
    pub reviewer: String,
    /// How.
    pub vote: VoteKind,
    /// Why.
    #[serde(default)]
    pub reason: String,
    /// A better fix, when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// A merged finding with its votes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SynthesisFinding {
    /// The finding.
    #[serde(flatten)]
    pub finding: Finding,
    /// The votes cast on it.
    #[serde(default)]
    pub votes: Vec<RecordedVote>,
}

/// One entry of `review:synthesis`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SynthesisEntry {
    /// What the votes decided.
    pub result: VoteResult,
    /// The finding and its votes.
    pub finding: SynthesisFinding,
}

/// `review:synthesis`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewSynthesis {
    /// The stage under review.
    pub stage: String,
    /// The round.
    pub round: u32,
    /// Every merged finding with its result and votes.
    pub entries: Vec<SynthesisEntry>,
    /// The merge failed twice; findings went on unmerged.
    #[serde(default)]
    pub merge_failed: bool,
    /// Reviewers whose vote request failed or stayed unreadable.
    #[serde(default)]
    pub no_votes_from: Vec<String>,
    /// Why the merge failed (its last failure), when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_error: Option<String>,
    /// Why each reviewer in `no_votes_from` sent no vote.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vote_errors: BTreeMap<String, String>,
}

/// The judge's decision on one finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedJudgement {
    /// The finding's id.
    pub finding: String,
    /// Act on it or skip it.
    pub decision: JudgeAct,
    /// Why, in one line.
    #[serde(default)]
    pub reason: String,
}

/// `refine:judge`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefineJudge {
    /// The stage.
    pub stage: String,
    /// The round.
    pub round: u32,
    /// Where the round goes.
    pub route: Route,
    /// Why.
    pub reason: String,
    /// The judge's answers to the round's questions.
    #[serde(default)]
    pub answers: BTreeMap<String, serde_json::Value>,
    /// The judge's decision on each finding.
    #[serde(default)]
    pub findings: Vec<RecordedJudgement>,
    /// Why the judge's reply could not be used (it sent no usable reply
    /// twice; the route then follows the rules without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `kickback`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kickback {
    /// The stage that sends the work back.
    pub from: String,
    /// The sender's round.
    #[serde(default)]
    pub round: u32,
    /// The stage that gets it.
    pub to: String,
    /// Why.
    pub reason: String,
    /// The findings it must act on.
    #[serde(default)]
    pub findings: Vec<Finding>,
}

/// `approval:request`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The approve stage.
    pub stage: String,
    /// Which ask this is: a new one follows when the bytes changed.
    #[serde(default = "one")]
    pub round: u32,
    /// Each file to approve with the SHA-256 of its bytes.
    pub files: BTreeMap<String, String>,
    /// Why this ask was made again (the bytes changed since the last one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `approval`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// The approve stage.
    pub stage: String,
    /// The ask this answers.
    #[serde(default = "one")]
    pub round: u32,
    /// The exact bytes approved, by SHA-256.
    pub files: BTreeMap<String, String>,
    /// Approved or rejected.
    pub approved: bool,
    /// Who decided.
    pub by: String,
    /// Why, when given.
    #[serde(default)]
    pub reason: String,
}

/// `run:pause`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunPause {
    /// Why the run paused.
    pub reason: String,
    /// What it waits for (`readable goal check`, `reviewers`, `approval`, ...).
    pub waiting_for: String,
}

/// `run:resume`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResume {
    /// Why the run was taken up again.
    pub reason: String,
    /// What it had been waiting for, if it was paused.
    #[serde(default)]
    pub waiting_for: String,
    /// A new budget given with this resume; it holds for the rest of the run.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "gavel_domain::finite::serialize_option"
    )]
    pub max_cost_usd: Option<f64>,
    /// The folder the run goes on in from here, absolute (it may differ from
    /// the one it started in: a copied workspace, `--workspace`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub workspace: String,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EndStatus {
    /// The work was accepted.
    Pass,
    /// The work was not accepted.
    Fail,
}

impl EndStatus {
    /// The status's name as written.
    pub const fn as_str(self) -> &'static str {
        match self {
            EndStatus::Pass => "pass",
            EndStatus::Fail => "fail",
        }
    }
}

/// `run:end`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEnd {
    /// Pass or fail.
    pub status: EndStatus,
    /// One sentence on why.
    pub summary: String,
    /// Rounds the run took, over all stages.
    pub rounds: u32,
    /// Usage totals over the whole run.
    pub usage: Usage,
}
