//! The submission as every engine applies it: [`SubmitRec`], an entry of
//! `submit` / `submit_many` / `import` once its options are checked and
//! resolved (op, presence, condition, data as JSON text). Frontends make
//! one from the wire's [`SubmitIn`] ([`SubmitRec::from_entry`]) or
//! straight from a bulk frame; the embedded store applies and logs it as
//! it is, so a bulk write takes each member id once, without a copy.

use podium_engine::{Cond, Num, Presence, Submit, UpdateOp};

use crate::api::{CondIn, NamedScores, Only, Score, SubmitIn};
use crate::error::{ApiError, Code};

/// A member id as a [`SubmitRec`] holds it: ids of up to 24 bytes (user
/// numbers, `player:123456`, 22-character base64 UUIDs) sit inline, so a
/// bulk write of such ids makes no heap allocation per entry, and the
/// engine's thread frees none when the batch is done.
pub type MemberBytes = smallvec::SmallVec<[u8; 24]>;

/// One checked submission.
#[derive(Debug, Clone, PartialEq)]
pub struct SubmitRec {
    pub member: MemberBytes,
    /// 0 (and unused) when `scores` is given.
    pub score: f64,
    /// A board with sort keys: values by key name (the board resolves the
    /// names, and refuses this on a plain board).
    pub scores: Option<Vec<(String, Num)>>,
    pub op: Option<UpdateOp>,
    pub presence: Presence,
    pub cond: Cond,
    pub name: Option<String>,
    pub data: Option<String>,
}

impl SubmitRec {
    /// The entry's checks (op name, data shape), taking its member and name
    /// instead of copying them; a refused entry's member id comes back
    /// with the error.
    pub fn from_entry(mut e: SubmitIn) -> Result<SubmitRec, (ApiError, String)> {
        let (op, data) = match Self::checked(&e) {
            Ok(v) => v,
            Err(err) => return Err((err, e.member)),
        };
        let member = MemberBytes::from_vec(std::mem::take(&mut e.member).into_bytes());
        let name = e.name.take();
        Ok(Self::with(&e, member, name, op, data))
    }

    /// [`SubmitRec::from_entry`] of a borrowed entry.
    pub fn from_ref(e: &SubmitIn) -> Result<SubmitRec, ApiError> {
        let (op, data) = Self::checked(e)?;
        let member = MemberBytes::from_slice(e.member.as_bytes());
        Ok(Self::with(e, member, e.name.clone(), op, data))
    }

    /// The options that can be refused, in the order they are checked.
    fn checked(e: &SubmitIn) -> Result<(Option<UpdateOp>, Option<String>), ApiError> {
        score_given(e)?;
        let op = e.op.as_deref().map(update_op).transpose()?;
        Ok((op, data_text(e.data.as_ref())?))
    }

    fn with(
        e: &SubmitIn,
        member: MemberBytes,
        name: Option<String>,
        op: Option<UpdateOp>,
        data: Option<String>,
    ) -> SubmitRec {
        SubmitRec {
            member,
            score: if e.scores.is_some() { 0.0 } else { e.score.0 },
            scores: e.scores.as_ref().map(|s| s.0.clone()),
            op,
            presence: presence(e.only),
            cond: cond(e.cond),
            name,
            data,
        }
    }

    /// The entry this record was made from, for an engine that takes the
    /// wire's shape (the member as text: a record from a bulk frame holds
    /// UTF-8, as every frontend checks).
    pub fn to_entry(&self) -> SubmitIn {
        SubmitIn {
            member: String::from_utf8_lossy(&self.member).into_owned(),
            score: if self.scores.is_some() {
                Score::ABSENT
            } else {
                Score(self.score)
            },
            scores: self.scores.clone().map(NamedScores),
            op: self.op.map(|op| op.as_str().to_string()),
            only: match self.presence {
                Presence::Any => None,
                Presence::OnlyNew => Some(Only::New),
                Presence::OnlyExisting => Some(Only::Existing),
            },
            cond: match self.cond {
                Cond::Always => None,
                Cond::Greater => Some(CondIn::Gt),
                Cond::Less => Some(CondIn::Lt),
            },
            name: self.name.clone(),
            data: self
                .data
                .as_deref()
                .map(|d| serde_json::from_str(d).unwrap_or(serde_json::Value::Null)),
        }
    }

    pub fn as_submit(&self) -> Submit<'_> {
        Submit {
            member: &self.member,
            score: self.score,
            op: self.op,
            presence: self.presence,
            cond: self.cond,
            name: self.name.as_deref(),
            data: self.data.as_deref(),
            scores: self.scores.as_deref(),
        }
    }
}

/// An entry's `only` as the engine's presence condition.
pub fn presence(only: Option<Only>) -> Presence {
    match only {
        None => Presence::Any,
        Some(Only::New) => Presence::OnlyNew,
        Some(Only::Existing) => Presence::OnlyExisting,
    }
}

/// An entry's `cond` as the engine's.
pub fn cond(c: Option<CondIn>) -> Cond {
    match c {
        None => Cond::Always,
        Some(CondIn::Gt) => Cond::Greater,
        Some(CondIn::Lt) => Cond::Less,
    }
}

/// Refuses an entry with neither `score` nor `scores`.
pub fn score_given(e: &SubmitIn) -> Result<(), ApiError> {
    if e.scores.is_none() && e.score.is_absent() {
        return Err(ApiError::new(
            Code::MalformedRequest,
            "missing field `score` (or `scores`, on a board with sort keys)",
        ));
    }
    Ok(())
}

/// An entry's `op`: `set`, `best` or `incr`.
pub fn update_op(s: &str) -> Result<UpdateOp, ApiError> {
    s.parse::<UpdateOp>()
        .map_err(|_| ApiError::bad(format!("op must be set, best or incr, got {s:?}")))
}

/// An entry's `data`: a JSON object kept as its text; `null` leaves the
/// stored data as it is.
pub fn data_text(v: Option<&serde_json::Value>) -> Result<Option<String>, ApiError> {
    match v {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(v @ serde_json::Value::Object(_)) => Ok(Some(v.to_string())),
        Some(_) => Err(ApiError::new(
            Code::InvalidData,
            "data must be a JSON object",
        )),
    }
}
