import Testing

@Suite struct StoreTestsPlaceholder {}
