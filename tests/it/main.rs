//! The one integration-test binary: one module per area.

mod fixtures;
mod property;
mod python;
mod python_templates;
mod revert;
mod rust_agents;
mod smoke;
mod smoke_python;
mod smoke_typescript;
mod support;
mod typescript;
