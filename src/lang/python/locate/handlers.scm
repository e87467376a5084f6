; A prompt handler candidate: a method named `prompt` directly in a class body, decorated or
; not (the locator keeps the `async def` ones: the SDK awaits its handler).
(class_definition
  body: (block
    [
      (function_definition
        name: (identifier) @name) @def
      (decorated_definition
        definition: (function_definition
          name: (identifier) @name) @def)
    ])
  (#eq? @name "prompt")) @class
