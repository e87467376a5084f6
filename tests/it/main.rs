//! The one integration-test binary: one module per area.

mod fixtures;
mod python;
mod python_real;
mod python_templates;
mod rust_agents;
mod smoke;
mod smoke_python;
mod smoke_typescript;
mod support;
mod typescript;
