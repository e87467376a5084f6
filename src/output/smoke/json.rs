//! A smoke run as JSON (the JSON printer's document): the report as it is typed, or
//! `{"passed": false, "error": ...}` when the run could not happen.

use serde_json::{Value, json};

use crate::smoke::SmokeError;
use crate::smoke::report::SmokeReport;

/// The report as a JSON value.
pub fn json(r: &SmokeReport) -> Value {
    serde_json::to_value(r).expect("the report serializes")
}

/// What a run that could not happen prints.
pub fn error_value(e: &SmokeError) -> Value {
    json!({"passed": false, "error": e.to_string(), "checks": []})
}
