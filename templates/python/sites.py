# acp-patch: the one-statement sites. Each `# site: NAME` section is inserted at one place
# in the agent, indented like the statement it goes beside; {{...}} are filled per agent.
# site: hook_start
_acp_progress_start({{AGENT}})
# site: hook_begin_turn
from {{MODULE}} import _acp_progress_begin_turn
_acp_progress_begin_turn({{AGENT}})
# site: hook_complete
_acp_progress_complete({{AGENT}})
# site: callback_store
{{AGENT}}.agent_progress_callback = agent_progress_callback
# site: wiring_callback
{{AGENT}}.agent_progress_callback = make_agent_progress_cb({{CONN}}, {{SESSION_ID}}, {{LOOP}}) if {{CONN}} else None
# site: text_hold_install
_acp_text_hold = install_acp_text_hold({{AGENT}})
# site: text_hold_end_turn_callback
await _acp_text_hold.aend_turn()
