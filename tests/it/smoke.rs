//! Smoke-run tests.
