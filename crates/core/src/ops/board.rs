//! Board administration: `board_create`, `board_update` (PUT), `board_delete`,
//! `reset` and `merge` / `intersect`.

use async_trait::async_trait;

use crate::api::{BoardOut, CombineIn, CombineOut, ResetOut};
use crate::backend::Backend;
use crate::error::ApiError;
use crate::op::Op;
use crate::ops::{operation, Operation};
use podium_engine::{Aggregate, Store};

/// Creates a board with `config`; an existing board is `board_exists`.
#[derive(Debug, Clone)]
pub struct CreateBoard {
    pub board: String,
    pub config: serde_json::Value,
}

/// Creates a board or reconfigures it (`created` in the answer says which).
#[derive(Debug, Clone)]
pub struct PutBoard {
    pub board: String,
    pub config: serde_json::Value,
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
    PutBoard => BoardPut, board_put -> BoardOut;
    DeleteBoard => BoardDelete, board_delete -> ();
    Reset => Reset, reset -> ResetOut;
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
