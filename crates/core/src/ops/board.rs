//! Board administration: `board_create`, `board_update` (PUT: the whole
//! config), `board_patch` (PATCH: some fields, the others kept),
//! `board_delete`, `reset` and `merge` / `intersect`.
//!
//! A change of config that re-ranks a board's members (its `order`,
//! `ranking`, `tiebreak` or `sort`) is made only when the request says
//! `confirm_rerank: true`: a config written back with a field left out
//! would otherwise re-rank a live board without anyone having asked.

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::api::{BoardOut, CombineIn, CombineOut, ResetOut};
use crate::backend::Backend;
use crate::error::{ApiError, Code};
use crate::op::Op;
use crate::ops::{operation, Operation};
use podium_engine::{Aggregate, BoardConfig, Store};

/// The field of a `board_update` or `board_patch` body that allows the
/// change to re-rank the board.
pub const CONFIRM_RERANK: &str = "confirm_rerank";

/// Takes `confirm_rerank` out of a request body (an object; anything else
/// is left for the config's own check to refuse).
fn take_confirm(body: &mut Value) -> Result<bool, ApiError> {
    let Some(o) = body.as_object_mut() else {
        return Ok(false);
    };
    match o.remove(CONFIRM_RERANK) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(b),
        Some(_) => Err(ApiError::new(
            Code::InvalidConfig,
            format!("{CONFIRM_RERANK} must be true or false"),
        )),
    }
}

/// What a change from `old` to `new` re-ranks, in words (`None`: nothing).
fn rerank_of(old: &BoardConfig, new: &BoardConfig) -> Option<String> {
    if !old.reranks(new) {
        return None;
    }
    let mut what = Vec::new();
    if old.order != new.order {
        what.push(format!(
            "order {} → {}",
            old.order.as_str(),
            new.order.as_str()
        ));
    }
    if old.ranking != new.ranking {
        what.push(format!(
            "ranking {} → {}",
            old.ranking.as_str(),
            new.ranking.as_str()
        ));
    }
    if old.tiebreak != new.tiebreak {
        what.push(format!(
            "tiebreak {} → {}",
            old.tiebreak.as_str(),
            new.tiebreak.as_str()
        ));
    }
    if what.is_empty() || !podium_engine::sort::same_order(&old.sort, &new.sort) {
        what.push("the sort keys".to_string());
    }
    Some(what.join(", "))
}

/// Refuses a change of `info`'s config to `new` that re-ranks the board,
/// unless confirmed. An archive is left to the storage, which refuses
/// any change of it as `read_only`.
fn check_rerank(info: &BoardOut, new: &Value, confirmed: bool) -> Result<(), ApiError> {
    if confirmed || info.read_only {
        return Ok(());
    }
    // A config that does not read is refused by the storage, with the
    // message of its first fault.
    let (Ok(old), Ok(new)) = (
        BoardConfig::from_json(&info.config),
        BoardConfig::from_json(new),
    ) else {
        return Ok(());
    };
    match rerank_of(&old, &new) {
        None => Ok(()),
        Some(what) => Err(ApiError::new(
            Code::ConfirmRerankRequired,
            format!(
                "this change re-ranks board {:?} ({what}; {} member{}): send it again \
                 with \"{CONFIRM_RERANK}\": true to re-rank it, or leave those fields as \
                 they are (PATCH changes only the fields it names)",
                info.board,
                info.members,
                if info.members == 1 { "" } else { "s" }
            ),
        )),
    }
}

/// The board's current config, or `None` when there is no such board.
async fn current(be: &dyn Backend, board: &str) -> Result<Option<BoardOut>, ApiError> {
    let req = crate::ops::BoardInfo {
        board: board.to_string(),
    };
    match be.board_info(&req).await {
        Ok(info) => Ok(Some(info)),
        Err(e) if e.code == Code::BoardNotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Applies a JSON merge patch (RFC 7396) to `target`: a `null` removes a
/// field, an object merges into the object there, any other value
/// replaces it.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let t = target.as_object_mut().expect("made an object above");
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// Creates a board with `config`; an existing board is `board_exists`.
#[derive(Debug, Clone)]
pub struct CreateBoard {
    pub board: String,
    pub config: serde_json::Value,
}

/// Creates a board or reconfigures it with a whole config (`created` in
/// the answer says which); fields left out take their defaults.
#[derive(Debug, Clone)]
pub struct PutBoard {
    pub board: String,
    pub config: serde_json::Value,
    /// Whether the change may re-rank an existing board.
    pub confirm_rerank: bool,
}

impl PutBoard {
    /// From a request body: the config, with [`CONFIRM_RERANK`] taken out.
    pub fn from_body(board: String, mut body: Value) -> Result<PutBoard, ApiError> {
        let confirm_rerank = take_confirm(&mut body)?;
        Ok(PutBoard {
            board,
            config: body,
            confirm_rerank,
        })
    }
}

/// Changes the fields of an existing board's config that `patch` names
/// (a JSON merge patch: `null` puts a field back to its default), the
/// others kept.
#[derive(Debug, Clone)]
pub struct PatchBoard {
    pub board: String,
    /// A JSON object.
    pub patch: Value,
    /// Whether the change may re-rank the board.
    pub confirm_rerank: bool,
}

impl PatchBoard {
    /// From a request body: the patch, with [`CONFIRM_RERANK`] taken out.
    pub fn from_body(board: String, mut body: Value) -> Result<PatchBoard, ApiError> {
        if !body.is_object() {
            return Err(ApiError::new(
                Code::InvalidConfig,
                "a board patch must be a JSON object of the config fields to change",
            ));
        }
        let confirm_rerank = take_confirm(&mut body)?;
        Ok(PatchBoard {
            board,
            patch: body,
            confirm_rerank,
        })
    }
}

/// Deletes a board with its config.
#[derive(Debug, Clone)]
pub struct DeleteBoard {
    pub board: String,
}

/// Archives the board now as `NAME@PERIOD` and empties it.
#[derive(Debug, Clone)]
pub struct Reset {
    pub board: String,
}

/// Overwrites `dest` with the union (`intersect == false`) or the
/// intersection of the sources.
#[derive(Debug, Clone)]
pub struct Combine {
    pub dest: String,
    pub req: CombineIn,
    pub intersect: bool,
}

impl Combine {
    /// The weighted sources and the aggregate, checked in this order.
    pub fn args(&self) -> Result<(Vec<(String, f64)>, Aggregate), ApiError> {
        let req = &self.req;
        if req.sources.is_empty() {
            return Err(ApiError::bad("at least one source board is needed"));
        }
        let weights = match &req.weights {
            None => vec![1.0; req.sources.len()],
            Some(w) if w.len() == req.sources.len() => w.clone(),
            Some(_) => {
                return Err(ApiError::bad(
                    "weights must have one number per source board",
                ))
            }
        };
        if weights.iter().any(|w| w.is_nan()) {
            return Err(ApiError::bad("weights must be numbers"));
        }
        let aggregate = match req.aggregate.as_deref().unwrap_or("sum") {
            "sum" => Aggregate::Sum,
            "min" => Aggregate::Min,
            "max" => Aggregate::Max,
            other => {
                return Err(ApiError::bad(format!(
                    "aggregate must be sum, min or max, got {other:?}"
                )))
            }
        };
        for s in &req.sources {
            Store::validate_user_name(s)?;
        }
        Ok((
            req.sources.iter().cloned().zip(weights).collect(),
            aggregate,
        ))
    }
}

operation! {
    CreateBoard => BoardPut, board_create -> BoardOut;
    DeleteBoard => BoardDelete, board_delete -> ();
    Reset => Reset, reset -> ResetOut;
}

#[async_trait]
impl Operation for PutBoard {
    type Out = BoardOut;

    fn op(&self) -> Op {
        Op::BoardPut
    }

    async fn run(&self, be: &dyn Backend) -> Result<BoardOut, ApiError> {
        if !self.confirm_rerank {
            if let Some(info) = current(be, &self.board).await? {
                check_rerank(&info, &self.config, false)?;
            }
        }
        be.board_put(self).await
    }
}

/// Read, merged and written back as a whole config: one home for the
/// merge whatever the storage. Two patches of one board at the same
/// instant may each start from the config before the other; a board's
/// config is changed by people, rarely, and each write is whole and
/// checked, so the later one wins as a PUT would.
#[async_trait]
impl Operation for PatchBoard {
    type Out = BoardOut;

    fn op(&self) -> Op {
        Op::BoardPatch
    }

    async fn run(&self, be: &dyn Backend) -> Result<BoardOut, ApiError> {
        let info = current(be, &self.board)
            .await?
            .ok_or_else(|| ApiError::no_board(&self.board))?;
        let mut config = info.config.clone();
        if let Some(o) = config.as_object_mut() {
            // Set by reset on an archive, refused in a config written.
            o.remove("archive_of");
            o.remove("archive_seq");
        }
        merge_patch(&mut config, &self.patch);
        check_rerank(&info, &config, self.confirm_rerank)?;
        let put = PutBoard {
            board: self.board.clone(),
            config,
            confirm_rerank: true,
        };
        let mut out = be.board_put(&put).await?;
        out.created = None;
        Ok(out)
    }
}

#[async_trait]
impl Operation for Combine {
    type Out = CombineOut;

    fn op(&self) -> Op {
        if self.intersect {
            Op::Intersect
        } else {
            Op::Merge
        }
    }

    async fn run(&self, be: &dyn Backend) -> Result<CombineOut, ApiError> {
        be.combine(self).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc_7396() {
        // RFC 7396's own example.
        let mut doc = json!({"title": "Goodbye!", "author": {"givenName": "John",
            "familyName": "Doe"}, "tags": ["example", "sample"], "content": "This will be unchanged"});
        merge_patch(
            &mut doc,
            &json!({"title": "Hello!", "phoneNumber": "+01-123-456-7890",
                "author": {"familyName": null}, "tags": ["example"]}),
        );
        assert_eq!(
            doc,
            json!({"title": "Hello!", "author": {"givenName": "John"}, "tags": ["example"],
                "content": "This will be unchanged", "phoneNumber": "+01-123-456-7890"})
        );
        let mut doc = json!({"a": 1});
        merge_patch(&mut doc, &json!({"a": {"b": null, "c": 2}}));
        assert_eq!(doc, json!({"a": {"c": 2}}));
    }

    #[test]
    fn confirm_rerank_is_taken_out_of_the_body() {
        let p = PutBoard::from_body("b".into(), json!({"order": "asc", "confirm_rerank": true}))
            .unwrap();
        assert!(p.confirm_rerank);
        assert_eq!(p.config, json!({"order": "asc"}));
        let p = PatchBoard::from_body("b".into(), json!({"keep_archives": 8})).unwrap();
        assert!(!p.confirm_rerank);
        let e = PutBoard::from_body("b".into(), json!({"confirm_rerank": "yes"})).unwrap_err();
        assert_eq!(e.code, Code::InvalidConfig);
        let e = PatchBoard::from_body("b".into(), json!([1])).unwrap_err();
        assert_eq!(e.code, Code::InvalidConfig);
    }

    #[test]
    fn a_change_of_order_needs_confirming() {
        let info = |config: Value| BoardOut {
            board: "b".into(),
            members: 3,
            read_only: false,
            heap_bytes: 0,
            archive_of: None,
            config,
            period: None,
            next_reset: None,
            created: None,
        };
        let asc = info(
            BoardConfig::from_json(&json!({"order": "asc"}))
                .unwrap()
                .to_public_json(),
        );
        // A PUT that leaves `order` out puts it back to desc: a re-rank.
        let e = check_rerank(&asc, &json!({"keep_archives": 8}), false).unwrap_err();
        assert_eq!(e.code, Code::ConfirmRerankRequired);
        assert_eq!(e.code.status(), 409);
        assert!(e.message.contains("order asc → desc"), "{}", e.message);
        assert!(
            e.message.contains("\"confirm_rerank\": true"),
            "{}",
            e.message
        );
        check_rerank(&asc, &json!({"keep_archives": 8}), true).unwrap();
        check_rerank(&asc, &json!({"order": "asc", "keep_archives": 8}), false).unwrap();
        let e =
            check_rerank(&asc, &json!({"order": "asc", "ranking": "dense"}), false).unwrap_err();
        assert!(
            e.message.contains("ranking unique → dense"),
            "{}",
            e.message
        );
    }
}
