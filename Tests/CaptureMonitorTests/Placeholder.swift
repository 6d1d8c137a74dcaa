import Testing

@Suite struct CaptureMonitorTestsPlaceholder {}
