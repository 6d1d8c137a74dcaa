import Testing

@Suite struct PlayerTestsPlaceholder {}
