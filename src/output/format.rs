//! The one `--format` of every command, and the formats each command takes: clap offers a
//! command only its own (in `--help`, the completions and the man pages) and refuses any
//! other with its usual usage error (exit 2) naming them.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use std::ffi::OsStr;
use std::fmt;

/// What a command prints: one printer per format (`Format::printer`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Format {
    #[default]
    Text,
    Json,
    /// GitHub Actions workflow commands (annotations).
    Github,
    /// One self-contained HTML page (smoke).
    Html,
    /// A `git format-patch` series for `git am` (apply).
    Patch,
}

impl Format {
    const ALL: [Format; 5] = [
        Format::Text,
        Format::Json,
        Format::Github,
        Format::Html,
        Format::Patch,
    ];

    /// The value `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Github => "github",
            Format::Html => "html",
            Format::Patch => "patch",
        }
    }

    fn named(name: &str) -> Option<Format> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The formats one command takes, each with what it means there (`""`: nothing to add),
/// as `--format`'s value parser: `#[arg(long, value_parser = Formats::VERIFY)]`.
#[derive(Debug, Clone, Copy)]
pub struct Formats(&'static [(Format, &'static str)]);

const ANNOTATIONS: &str = "GitHub Actions annotations";

impl Formats {
    pub const APPLY: Formats = Formats(&[
        (Format::Text, ""),
        (Format::Json, ""),
        (Format::Github, ANNOTATIONS),
        (
            Format::Patch,
            "A `git format-patch` series (mbox) for `git am`",
        ),
    ]);
    pub const VERIFY: Formats = Formats(&[
        (Format::Text, ""),
        (Format::Json, ""),
        (Format::Github, ANNOTATIONS),
    ]);
    pub const INIT: Formats = Self::VERIFY;
    pub const REVERT: Formats = Self::VERIFY;
    pub const SMOKE: Formats = Formats(&[
        (
            Format::Text,
            "The turn as a client shows it, the checks and the verdict",
        ),
        (
            Format::Json,
            "One JSON document: every raw line, check and figure",
        ),
        (
            Format::Github,
            "GitHub Actions annotations (one per check that fails the run, a warning per finding about the agent), the text report on stderr",
        ),
        (
            Format::Html,
            "One self-contained HTML page with a timeline per session",
        ),
    ]);

    /// Whether the command takes `format`.
    pub fn takes(self, format: Format) -> bool {
        self.0.iter().any(|(f, _)| *f == format)
    }

    fn values(self) -> impl Iterator<Item = PossibleValue> {
        self.0.iter().map(|(f, help)| {
            let value = PossibleValue::new(f.name());
            if help.is_empty() {
                value
            } else {
                value.help(*help)
            }
        })
    }
}

impl TypedValueParser for Formats {
    type Value = Format;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<Format, clap::Error> {
        // clap's own refusal of a value not among the command's: `invalid value 'html' for
        // '--format <FORMAT>'`, the possible values, exit 2
        let name = PossibleValuesParser::new(self.values()).parse_ref(cmd, arg, value)?;
        Ok(Format::named(&name).expect("a command takes only formats that exist"))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.values()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_is_named_once_and_every_command_takes_text() {
        for f in Format::ALL {
            assert_eq!(Format::named(f.name()), Some(f));
            assert_eq!(f.to_string(), f.name());
        }
        for formats in [
            Formats::APPLY,
            Formats::VERIFY,
            Formats::INIT,
            Formats::REVERT,
            Formats::SMOKE,
        ] {
            assert!(formats.takes(Format::Text));
        }
        assert!(Formats::SMOKE.takes(Format::Html) && !Formats::VERIFY.takes(Format::Html));
        assert!(Formats::APPLY.takes(Format::Patch) && !Formats::SMOKE.takes(Format::Patch));
    }
}
