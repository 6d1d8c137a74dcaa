import FuzzTargets

/// libFuzzer's entry point: one input to `FuzzTarget.h264`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    FuzzTarget.h264.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
