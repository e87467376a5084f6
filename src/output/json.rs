//! JSON: exactly one document on stdout, whatever happened (a refusal is
//! `{"ok": false, "error": {...}}`); a dry run's diff is its `diff` field.

use super::{
    Context, Printer, SmokeResult, Streams, apply_summary, init_summary, revert_summary, smoke,
};
use crate::commands::init::InitOutcome;
use crate::commands::{ApplyOutcome, RevertOutcome, VerifyOutcome};
use crate::error::Error;
use serde_json::{Value, json};
use std::io;

pub struct Json;

fn emit(s: &mut Streams, doc: &Value) -> io::Result<()> {
    let text = serde_json::to_string_pretty(doc).expect("JSON values serialize");
    s.out.write_all(text.as_bytes())?;
    s.out.write_all(b"\n")?;
    s.out.flush()
}

/// A refusal as JSON: what, where, the candidates to pin and the exit code.
pub fn error_value(command: &str, e: &Error) -> Value {
    let candidates: Vec<Value> = e
        .candidates()
        .iter()
        .map(|c| json!({ "file": c.location.file, "line": c.location.line, "name": c.name }))
        .collect();
    json!({
        "ok": false,
        "command": command,
        "error": {
            "kind": e.kind(),
            "message": e.to_string(),
            "location": e.location(),
            "candidates": candidates,
            "exit_code": e.exit_code(),
        },
    })
}

impl Printer for Json {
    fn apply(&self, s: &mut Streams, outcome: &ApplyOutcome, _dry_run: bool) -> io::Result<()> {
        let mut doc = serde_json::to_value(outcome).expect("outcome serializes");
        doc["ok"] = Value::Bool(true);
        emit(s, &doc)?;
        apply_summary(s, outcome);
        Ok(())
    }

    fn verify(
        &self,
        s: &mut Streams,
        outcome: &VerifyOutcome,
        smoke: Option<&SmokeResult>,
    ) -> io::Result<()> {
        let report = |r: &crate::report::Report| -> Value {
            let mut v = serde_json::to_value(r).expect("report serializes");
            v["ok"] = Value::Bool(r.ok());
            v
        };
        // one agent: its report; several: {"ok", "agents": [...]}
        let mut verify = match outcome.reports.as_slice() {
            [one] => report(one),
            many => json!({
                "ok": many.iter().all(|r| r.ok()),
                "agents": many.iter().map(report).collect::<Vec<_>>(),
            }),
        };
        if !outcome.notes.is_empty() {
            verify["notes"] = json!(outcome.notes);
        }
        let doc = match smoke {
            None => verify,
            Some(Ok(r)) => json!({ "verify": verify, "smoke": smoke::json(r) }),
            Some(Err(e)) => json!({ "verify": verify, "smoke": smoke::error_value(e) }),
        };
        emit(s, &doc)?;
        for note in &outcome.notes {
            s.say(&format!("note: {note}"));
        }
        Ok(())
    }

    fn init(&self, s: &mut Streams, outcome: &InitOutcome, dry_run: bool) -> io::Result<()> {
        let mut doc = serde_json::to_value(outcome).expect("outcome serializes");
        doc["ok"] = Value::Bool(true);
        emit(s, &doc)?;
        init_summary(s, outcome, dry_run);
        Ok(())
    }

    fn revert(&self, s: &mut Streams, outcome: &RevertOutcome, _dry_run: bool) -> io::Result<()> {
        let mut doc = serde_json::to_value(outcome).expect("outcome serializes");
        doc["ok"] = Value::Bool(true);
        emit(s, &doc)?;
        revert_summary(s, outcome);
        Ok(())
    }

    fn error(&self, s: &mut Streams, cx: &Context, e: &Error) -> io::Result<()> {
        emit(s, &error_value(cx.command, e))?;
        s.say(&format!("acp-patch: error: {e}"));
        Ok(())
    }

    /// The report as it is typed (transcript with raw lines and times, checks with what
    /// they judge, figures), or `{"passed": false, "error": ...}` when the run could not
    /// happen.
    fn smoke(&self, s: &mut Streams, r: &SmokeResult) -> io::Result<()> {
        match r {
            Ok(r) => emit(s, &smoke::json(r)),
            Err(e) => {
                emit(s, &smoke::error_value(e))?;
                s.say(&format!("acp-patch smoke: {e}"));
                Ok(())
            }
        }
    }
}
