; An SDK send of a session update: `<receiver>.session_update(...)` (SDK >= 0.7) or
; `<receiver>.sessionUpdate(...)` (<= 0.6), the receiver whatever expression it is. An
; override calling its base (`super().session_update(...)`) matches too: the locator
; leaves it alone, it is no send of its own.
(call
  function: (attribute
    object: (_) @receiver
    attribute: (identifier) @method)
  (#any-of? @method "session_update" "sessionUpdate")) @send
