import FuzzTargets

/// libFuzzer's entry point: one input to `FuzzTarget.mpdRoundTrip`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    FuzzTarget.mpdRoundTrip.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
