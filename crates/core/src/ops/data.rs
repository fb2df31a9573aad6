//! `set_data`: a member's display name and free-form data, score untouched.

use crate::api::SetDataOut;
use crate::ops::operation;

/// `name` and `data` replace the member's when given (`""` / `null` clear
/// them).
#[derive(Debug, Clone)]
pub struct SetData {
    pub board: String,
    pub member: String,
    pub name: Option<String>,
    pub data: Option<serde_json::Value>,
}

operation! {
    SetData => SetData, set_data -> SetDataOut;
}
