import Testing

@Suite struct HTTPServerTestsPlaceholder {}
