import Testing

@Suite struct GatewayTestsPlaceholder {}
