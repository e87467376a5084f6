// Snippets inserted into the agent's own code. Each starts at a `// site: NAME` line;
// `{{KEY}}` on a line of its own takes several lines (or none).

// site: field_decls
/// acp-patch: the progress callback, set per turn by the wiring.
pub(crate) agent_progress_callback: {{CELL}}<Option<AcpProgressCallback>>,
/// acp-patch: state of the "Thinking..." card and of the text hold.
pub(crate) acp_thinking: {{PTR}}<AcpThinking>,

// site: field_inits
agent_progress_callback: Default::default(),
acp_thinking: Default::default(),

// site: wiring
let _acp_turn = acp_begin_turn(&self.acp_thinking, &self.agent_progress_callback, {{SESSION_KEY}}, {
    {{CAPTURES}}
    {{PTR}}::new(move |{{UPDATE}}: {{ACP}}::SessionUpdate| {
        {{CLONES}}
        acp_deliver(async move {
            {{BINDS}}
            {{SEND_EXPR}}
        });
    })
});

// site: hook_start
acp_progress_start(&self.acp_thinking, &self.agent_progress_callback, &{{SESSION_KEY}});

// site: hook_complete
if acp_is_turn_output(&{{UPDATE_NAME}}) {
    acp_progress_complete(&self.acp_thinking, &self.agent_progress_callback, &{{SESSION_KEY}});
}

// site: text_hold_gate
let Some({{UPDATE}}) = acp_text_hold(&self.acp_thinking, &{{SESSION_KEY}}, {{UPDATE_NAME}}) else {
    {{RETURN}}
};
