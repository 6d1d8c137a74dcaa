import Foundation
import Testing

/// Interrupted runs leave nothing at `--out`: the output is built in a hidden sibling and renamed into
/// place only when complete. The packager is stopped midway deterministically by feeding it a
/// transport stream through a FIFO and holding the rest back: it writes segments, then blocks reading.
@Suite(.serialized, .timeLimit(.minutes(30))) struct PackageAtomicityTests {
    /// A FIFO whose writer holds back the end of a stream.
    final class StalledInput {
        let path: String
        private var descriptor: Int32 = -1

        init(in directory: TemporaryDirectory) throws {
            path = directory.path("stalled.ts")
            #expect(mkfifo(path, 0o600) == 0)
        }

        /// What feeding the FIFO came to.
        enum Fed: Equatable {
            /// Every byte was written.
            case everything
            /// The reader closed the FIFO (EPIPE) after `bytes` were written.
            case readerGone(bytes: Int)
            /// The packager never opened the FIFO, or writing failed or stalled for a minute.
            case failed
        }

        /// Opens the FIFO once the packager is reading it and writes `bytes` in pieces of `chunk`,
        /// waiting after each until the reader has taken all of it, without blocking forever.
        ///
        /// A write to a FIFO whose reader has gone raises SIGPIPE, which would end the test process.
        /// Rather than ignore SIGPIPE process-wide (children spawned meanwhile by other tests could
        /// inherit that), it is blocked on this thread only while writing, so the write fails with EPIPE
        /// instead; a SIGPIPE left pending is taken with `sigtimedwait` before the old mask comes back.
        /// Nothing here suspends, so no other test runs on this thread in between.
        func feed(_ bytes: [UInt8], chunk: Int = 1 << 30) -> Fed {
            guard
                descriptor >= 0
                    || waitUntil({
                        descriptor = open(path, O_WRONLY | O_NONBLOCK)
                        return descriptor >= 0
                    })
            else { return .failed }
            var pipeSignal = sigset_t()
            sigemptyset(&pipeSignal)
            sigaddset(&pipeSignal, SIGPIPE)
            var previous = sigset_t()
            pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous)
            defer {
                var now = timespec(tv_sec: 0, tv_nsec: 0)
                while sigtimedwait(&pipeSignal, nil, &now) == SIGPIPE {}
                pthread_sigmask(SIG_SETMASK, &previous, nil)
            }
            var offset = 0
            while offset < bytes.count {
                let end = min(offset + chunk, bytes.count)
                let deadline = Date().addingTimeInterval(60)
                while offset < end && Date() < deadline {
                    let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, end - offset) }
                    if written > 0 {
                        offset += written
                    } else if errno == EPIPE {
                        return .readerGone(bytes: offset)
                    } else if errno == EAGAIN || errno == EINTR {
                        usleep(5_000)
                    } else {
                        return .failed
                    }
                }
                guard offset == end, waitUntil({ unread() == 0 || readerGone() }) else { return .failed }
                if readerGone() { return .readerGone(bytes: offset) }
            }
            return .everything
        }

        /// Bytes written to the FIFO that its reader has not taken yet (`FIONREAD`), or −1.
        func unread() -> Int32 {
            var count: Int32 = 0
            return ioctl(descriptor, UInt(FIONREAD), &count) == 0 ? count : -1
        }

        /// True once no process has the FIFO open for reading (`poll` reports POLLERR on the write end).
        func readerGone() -> Bool {
            var entry = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
            return poll(&entry, 1, 0) == 1 && entry.revents & Int16(POLLERR) != 0
        }

        /// Closes the writer: the packager's next read sees the end of the stream.
        func close() {
            if descriptor >= 0 { _ = Glibc.close(descriptor) }
            descriptor = -1
        }

        deinit { close() }
    }

    /// A running `guard-play package` process, its standard error going to `stderr`.
    private func start(_ arguments: [String], stderr: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: guardPlayBinary)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        _ = FileManager.default.createFile(atPath: stderr, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderr))
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

    /// An old output, a packager stalled midway over it with --force, and the rest of its input.
    private struct StalledRun {
        var output: String
        var old: [String: Data]
        var oldKey: Data
        var input: StalledInput
        var process: Process
        var rest: [UInt8]
        var stderr: String
    }

    /// Packages clip.mp4 as the old output, then starts a packager over it fed three quarters of the
    /// clip as a transport stream: it has written a segment and taken every byte fed so far.
    private func stalledRun(_ directory: TemporaryDirectory) throws -> StalledRun {
        let output = directory.path("clip")
        #expect(try package(fixture("clip.mp4"), output).status == 0)
        let old = try snapshot(output)
        let oldKey = try Data(contentsOf: URL(fileURLWithPath: output + ".key"))
        let ts = directory.path("clip.ts")
        #expect(try ffmpeg(["-i", fixture("clip.mp4"), "-c", "copy", "-f", "mpegts", ts]).status == 0)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: ts)))

        let input = try StalledInput(in: directory)
        let stderr = directory.path("stderr")
        // A new random key: if the run published anything, the key file would change too.
        let process = try start(["package", input.path, "--out", output, "--force", "--quiet"], stderr: stderr)
        // Fed and taken: the FIFO is empty, so the packager has read all of it (the stall signal).
        #expect(input.feed(Array(bytes.prefix(bytes.count * 3 / 4))) == .everything)
        let midway = waitUntil {
            partialSiblings(of: output).contains { sibling in
                FileManager.default.fileExists(atPath: directory.path(sibling) + "/video_00000.ts")
            }
        }
        #expect(midway, "the packager never started writing segments")
        #expect(process.isRunning)
        return StalledRun(
            output: output, old: old, oldKey: oldKey, input: input, process: process,
            rest: Array(bytes.dropFirst(bytes.count * 3 / 4)), stderr: stderr)
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
        // The input flows on, a few packets at a time, and is never closed: the packager, checking for
        // cancellation between access units, stops and closes the FIFO (EPIPE here), or, had it taken
        // everything first, would stay blocked until the grace period's last resort; it never sees the
        // end of its input, so it cannot finish and publish.
        let fed = run.input.feed(run.rest, chunk: 188 * 20)
        #expect(fed != .failed)
        #expect(finishes(run.process))
        run.input.close()
        #expect(run.process.terminationStatus == 130)
        // Stopped by the job itself, which says so; the last resort exits without a word.
        let said = try String(contentsOfFile: run.stderr, encoding: .utf8)
        #expect(said.contains("packaging was cancelled"), "\(fed): \(said)")
        #expect(try snapshot(run.output) == run.old)
        #expect(try Data(contentsOf: URL(fileURLWithPath: run.output + ".key")) == run.oldKey)
        #expect(partialSiblings(of: run.output).isEmpty)
    }

    @Test func sigtermWhileBlockedGivesUpAfterTheGracePeriodAndCleansUp() throws {
        let directory = try TemporaryDirectory()
        let run = try stalledRun(directory)
        kill(run.process.processIdentifier, SIGTERM)
        // Nothing more is fed and the FIFO stays open, so the reader blocks on it (once it has worked
        // through what it already took); the signal handler's last resort removes the build.
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
        // The first published name (the hidden `.guard-play-output` marker aside).
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: output).filter { !$0.hasPrefix(".") }.sorted().first
                == "audio.m3u8")
        #expect(!FileManager.default.fileExists(atPath: output + "/video.m3u8"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: output + ".key")) != oldKey)
        #expect(partialSiblings(of: output).isEmpty)
        let verified = try guardPlay(["verify", output, "--source", fixture("song.m4a"), "--key-file", output + ".key"])
        #expect(verified.status == 0)
    }
}
