import Testing

@Suite struct ProtectionTestsPlaceholder {}
