import Foundation
import FuzzTargets

// `fuzz-replay TARGET PATH…`: runs each file (every file in a directory, in name order) once through
// the fuzz target's entry point, without mutation, naming each on standard error first, so a trap
// says which input caused it. Exits 0 when every input ran, 2 on a usage error; a trapping input
// ends the process by its signal.

let arguments = Array(CommandLine.arguments.dropFirst())
guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count >= 2 else {
    let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
    FileHandle.standardError.write(Data("usage: fuzz-replay TARGET PATH...\ntargets: \(names)\n".utf8))
    exit(2)
}

var files: [String] = []
for path in arguments.dropFirst() {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
        FileHandle.standardError.write(Data("fuzz-replay: no such file or directory: \(path)\n".utf8))
        exit(2)
    }
    if isDirectory.boolValue {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        files += names.filter { !$0.hasPrefix(".") }.sorted().map { "\(path)/\($0)" }
    } else {
        files.append(path)
    }
}

for file in files {
    guard let data = FileManager.default.contents(atPath: file) else {
        FileHandle.standardError.write(Data("fuzz-replay: cannot read \(file)\n".utf8))
        exit(2)
    }
    FileHandle.standardError.write(Data("replaying \(file)\n".utf8))
    target.run([UInt8](data))
}
print("\(target.rawValue): \(files.count) inputs ran")
