// Statements acp-patch inserts at each site, by name (`// site: NAME`); {{...}} are filled in.
// site: property
agentProgressCallback?: AcpProgressCallback;
// site: callback_store
this.agentProgressCallback = agentProgressCallback;
// site: wiring
this.agentProgressCallback = makeAgentProgressCb({{CONN}}, {{SESSION_ID}});
// site: text_hold_begin_turn
void acpTextHoldFlush(this{{KEY}}); // a new turn: forget the last one's reasoning
// site: hook_start
acpProgressStart(this);
// site: hook_complete
acpProgressComplete(this);
// site: hook_complete_first_update
acpProgressOnUpdate(this, {{UPDATE}});
// site: text_hold_gate
if (acpTextHold(this, {{UPDATE}}, (held) => this.{{EMITTER}}({{ARGS}}){{KEY}})) {
    return;
}
// site: text_hold_end_turn
{{AWAIT}} acpTextHoldFlush(this{{KEY}});
