//! The one integration-test binary: one module per area.

mod agent_suites;
mod agree;
mod cli;
mod fixtures;
mod hostile;
mod installed;
mod layout;
mod property;
mod python;
mod python_imports;
mod python_real;
mod python_strategy;
mod python_templates;
mod real_agents;
mod revert;
mod rust_agents;
mod series;
mod smoke;
mod smoke_browser;
mod smoke_modes;
mod smoke_presets;
mod smoke_python;
mod smoke_typescript;
mod startup;
mod support;
mod typescript;
