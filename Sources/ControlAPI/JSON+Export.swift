// `JSON` lives in SystemSupport, under every target that reads or writes JSON (FoundationEssentials has
// no `JSONSerialization`); ControlAPI's clients see it as before.
@_exported public import SystemSupport
