//! Model-based property tests: random sequences of every `Board` operation,
//! checked step by step against a naive model written from the documented
//! semantics (docs/spec.md §1–§2, the doc comments of `board.rs` and `config.rs`).
//!
//! The model is a plain `Vec` of entries kept sorted best first; it shares no
//! code with the engine (it only borrows the engine's plain data types —
//! `BoardConfig`, `Entry`, `Page`… — to compare results with `==`).
//!
//! An entry holds a tuple of values, one per sort key; a plain board is
//! one float key, its score.
//!
//! Every one of the 54 combinations of order × ranking × tiebreak × update
//! is exercised in every run: each test loops over the combinations and runs
//! a proptest runner per combination. Boards with sort keys loop over the
//! key count (1 to 4) × ranking × tiebreak × update, each case drawing its
//! keys' directions, types and operators. `PROPTEST_CASES=N` sets the
//! number of cases per combination for a longer soak run.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

use podium_engine::{
    Aggregate, Around, Board, BoardConfig, Cond, Entry, EntryInfo, Error, KeyOp, KeyType, Num,
    Order, Page, Presence, Ranking, Ranks, ScoreRange, Scores, SortKey, Submit, SubmitResult,
    Tiebreak, UpdateOp,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{TestCaseError, TestRunner};

const INF: f64 = f64::INFINITY;
const NEG_INF: f64 = f64::NEG_INFINITY;
const MAX_ID_BYTES: usize = 512;
const MAX_NAME: usize = 512;

mod combine;
mod docs;
mod naive;
mod ops;
mod runner;
mod strategies;

use naive::*;
use ops::*;
use runner::*;
use strategies::*;

// ===================================================================== tests

#[test]
fn every_operation_matches_the_model_in_all_18_configs_with_set_update() {
    run_sequences(ALL_ORDERS, &[UpdateOp::Set], SMALL, 128);
}

#[test]
fn every_operation_matches_the_model_in_all_18_configs_with_best_update() {
    run_sequences(ALL_ORDERS, &[UpdateOp::Best], SMALL, 128);
}

#[test]
fn every_operation_matches_the_model_in_all_18_configs_with_incr_update() {
    run_sequences(ALL_ORDERS, &[UpdateOp::Incr], SMALL, 128);
}

#[test]
fn boards_of_hundreds_spanning_many_leaves_match_the_model_in_all_54_configs() {
    run_sequences(ALL_ORDERS, ALL_UPDATES, LARGE, 4);
}

#[test]
fn desc_boards_of_thousands_with_three_tree_levels_match_the_model_in_all_27_configs() {
    run_sequences(&[Order::Desc], ALL_UPDATES, XL, 1);
}

#[test]
fn asc_boards_of_thousands_with_three_tree_levels_match_the_model_in_all_27_configs() {
    run_sequences(&[Order::Asc], ALL_UPDATES, XL, 1);
}

#[test]
fn boards_sorted_by_1_to_4_keys_match_the_model_in_all_36_configs_with_set_update() {
    run_sorted_sequences(&[1, 2, 3, 4], &[UpdateOp::Set], SMALL_SORTED, 48);
}

#[test]
fn boards_sorted_by_1_to_4_keys_match_the_model_in_all_36_configs_with_best_update() {
    run_sorted_sequences(&[1, 2, 3, 4], &[UpdateOp::Best], SMALL_SORTED, 48);
}

#[test]
fn boards_sorted_by_1_to_4_keys_match_the_model_in_all_36_configs_with_incr_update() {
    run_sorted_sequences(&[1, 2, 3, 4], &[UpdateOp::Incr], SMALL_SORTED, 48);
}

#[test]
fn sorted_boards_of_hundreds_match_the_model_in_all_108_configs() {
    run_sorted_sequences(&[1, 2, 3, 4], ALL_UPDATES, LARGE_SORTED, 2);
}

#[test]
fn sorted_boards_of_thousands_with_three_tree_levels_match_the_model_in_all_54_configs() {
    run_sorted_sequences(&[2, 4], ALL_UPDATES, XL_SORTED, 1);
}
