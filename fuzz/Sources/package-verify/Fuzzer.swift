import FuzzTargets

/// libFuzzer's entry point: one input to `FuzzTarget.packageVerify`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    FuzzTarget.packageVerify.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
