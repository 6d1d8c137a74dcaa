import Testing

@Suite struct PackagerTestsPlaceholder {}
