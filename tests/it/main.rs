//! The one integration-test binary: one module per area.

mod python_templates;
mod smoke;
