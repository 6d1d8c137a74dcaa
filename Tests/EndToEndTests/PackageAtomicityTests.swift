import Foundation
import Testing

/// Interrupted runs leave nothing at `--out`: the output is built in a hidden sibling and renamed into
/// place only when complete. The packager is stopped midway deterministically by feeding it a
/// transport stream through a FIFO and holding the rest back: it writes segments, then blocks reading.
@Suite(.serialized) struct PackageAtomicityTests {
    /// A FIFO whose writer holds back the end of a stream.
    final class StalledInput {
        let path: String
        private var descriptor: Int32 = -1

        init(in directory: TemporaryDirectory) throws {
            path = directory.path("stalled.ts")
            #expect(mkfifo(path, 0o600) == 0)
        }

        /// Opens the FIFO once the packager is reading it and writes `bytes`, without blocking forever.
        func feed(_ bytes: [UInt8]) -> Bool {
            signal(SIGPIPE, SIG_IGN)
            guard
                waitUntil({
                    descriptor = open(path, O_WRONLY | O_NONBLOCK)
                    return descriptor >= 0
                })
            else { return false }
            var offset = 0
            let deadline = Date().addingTimeInterval(60)
            while offset < bytes.count && Date() < deadline {
                let written = bytes.withUnsafeBytes {
                    write(descriptor, $0.baseAddress! + offset, bytes.count - offset)
                }
                if written > 0 {
                    offset += written
                } else if errno == EAGAIN || errno == EINTR {
                    usleep(5_000)
                } else {
                    return false
                }
            }
            return offset == bytes.count
        }

        /// Closes the writer: the packager's next read sees the end of the stream.
        func close() {
            if descriptor >= 0 { _ = Glibc.close(descriptor) }
            descriptor = -1
        }

        deinit { close() }
    }

    /// A running `guard-play package` process.
    private func start(_ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: guardPlayBinary)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }

    private func finishes(_ process: Process, within seconds: TimeInterval = 60) -> Bool {
        let done = waitUntil(timeout: seconds) { !process.isRunning }
        if !done {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        return done
    }

    /// An old output, the TS to feed, and a packager stalled midway over the old output with --force.
    private func stalledRun(
        _ directory: TemporaryDirectory
    ) throws -> (output: String, old: [String: Data], oldKey: Data, input: StalledInput, process: Process) {
        let output = directory.path("clip")
        #expect(try package(fixture("clip.mp4"), output).status == 0)
        let old = try snapshot(output)
        let oldKey = try Data(contentsOf: URL(fileURLWithPath: output + ".key"))
        let ts = directory.path("clip.ts")
        #expect(try ffmpeg(["-i", fixture("clip.mp4"), "-c", "copy", "-f", "mpegts", ts]).status == 0)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: ts)))

        let input = try StalledInput(in: directory)
        // A new random key: if the run published anything, the key file would change too.
        let process = try start(["package", input.path, "--out", output, "--force", "--quiet"])
        #expect(input.feed(Array(bytes.prefix(bytes.count * 3 / 4))))
        let midway = waitUntil {
            partialSiblings(of: output).contains { sibling in
                FileManager.default.fileExists(atPath: directory.path(sibling) + "/video_00000.ts")
            }
        }
        #expect(midway, "the packager never started writing segments")
        // Stalled: asleep reading the FIFO, everything fed so far consumed.
        let blocked = waitUntil {
            let wchan = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/wchan", encoding: .utf8)) ?? ""
            return wchan.contains("pipe")
        }
        #expect(blocked, "the packager never blocked on its input")
        #expect(process.isRunning)
        return (output, old, oldKey, input, process)
    }

    @Test func sigkillMidwayLeavesTheOldOutputAndTheNextRunCleansUp() throws {
        let directory = try TemporaryDirectory()
        let run = try stalledRun(directory)
        kill(run.process.processIdentifier, SIGKILL)
        #expect(finishes(run.process))
        run.input.close()
        #expect(run.process.terminationReason == .uncaughtSignal)
        #expect(try snapshot(run.output) == run.old)
        #expect(try Data(contentsOf: URL(fileURLWithPath: run.output + ".key")) == run.oldKey)
        // The half-built sibling is left behind by SIGKILL, under a name the next run recognises.
        #expect(partialSiblings(of: run.output).count == 1)

        let next = try package(fixture("song.m4a"), run.output, ["--force"])
        #expect(next.status == 0, "\(next.stderr)")
        #expect(partialSiblings(of: run.output).isEmpty)
        #expect(FileManager.default.fileExists(atPath: run.output + "/audio.m3u8"))
        #expect(!FileManager.default.fileExists(atPath: run.output + "/video.m3u8"))
    }

    @Test func sigtermMidwayCancelsAndRemovesTheBuild() throws {
        let directory = try TemporaryDirectory()
        let run = try stalledRun(directory)
        kill(run.process.processIdentifier, SIGTERM)
        usleep(200_000)  // let the signal be handled before the reader sees the end of the stream
        run.input.close()
        #expect(finishes(run.process))
        #expect(run.process.terminationStatus == 130)
        #expect(try snapshot(run.output) == run.old)
        #expect(try Data(contentsOf: URL(fileURLWithPath: run.output + ".key")) == run.oldKey)
        #expect(partialSiblings(of: run.output).isEmpty)
    }

    @Test func sigtermWhileBlockedGivesUpAfterTheGracePeriodAndCleansUp() throws {
        let directory = try TemporaryDirectory()
        let run = try stalledRun(directory)
        kill(run.process.processIdentifier, SIGTERM)
        // The reader stays blocked on the FIFO; the signal handler's last resort removes the build.
        #expect(finishes(run.process, within: 30))
        run.input.close()
        #expect(run.process.terminationStatus == 130)
        #expect(try snapshot(run.output) == run.old)
        #expect(partialSiblings(of: run.output).isEmpty)
    }

    @Test func forceReplacesTheOutputAndItsKeyWhenComplete() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        #expect(try package(fixture("clip.mp4"), output).status == 0)
        let oldKey = try Data(contentsOf: URL(fileURLWithPath: output + ".key"))
        let replaced = try guardPlay(["package", fixture("song.m4a"), "--out", output, "--force", "--quiet"])
        #expect(replaced.status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: output).sorted().first == "audio.m3u8")
        #expect(!FileManager.default.fileExists(atPath: output + "/video.m3u8"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: output + ".key")) != oldKey)
        #expect(partialSiblings(of: output).isEmpty)
        let verified = try guardPlay(["verify", output, "--source", fixture("song.m4a"), "--key-file", output + ".key"])
        #expect(verified.status == 0)
    }
}
