; The SDK's send taken as a function and called: `conn.sessionUpdate.bind(conn)`,
; `.call(conn, update)`, `.apply(conn, [update])`, the receiver whatever expression it is
; (`super`'s is the locator's to leave alone).
(call_expression
  function: (member_expression
    object: (member_expression
      object: (_) @receiver
      property: (property_identifier) @method)
    property: (property_identifier) @how)
  (#eq? @method "sessionUpdate")
  (#any-of? @how "bind" "call" "apply")) @send
