//! JSON: one document, the report as it is typed (transcript with raw lines and times, checks
//! with what they judge, figures), or `{"passed": false, "error": ...}` when the run could not
//! happen.

use std::io;

use serde_json::{Value, json};

use super::Printer;
use crate::output::Streams;
use crate::smoke::SmokeError;
use crate::smoke::report::SmokeReport;

pub struct Json;

/// The report as a JSON value.
pub fn json(r: &SmokeReport) -> Value {
    serde_json::to_value(r).expect("the report serializes")
}

/// What a run that could not happen prints.
pub fn error_value(e: &SmokeError) -> Value {
    json!({"passed": false, "error": e.to_string(), "checks": []})
}

fn emit(s: &mut Streams, v: &Value) -> io::Result<()> {
    let text = serde_json::to_string_pretty(v).expect("JSON values serialize");
    s.out.write_all(text.as_bytes())?;
    s.out.write_all(b"\n")?;
    s.out.flush()
}

impl Printer for Json {
    fn report(&self, s: &mut Streams, r: &SmokeReport) -> io::Result<()> {
        emit(s, &json(r))
    }
    fn error(&self, s: &mut Streams, e: &SmokeError) -> io::Result<()> {
        emit(s, &error_value(e))?;
        s.say(&format!("acp-patch smoke: {e}"));
        Ok(())
    }
}
