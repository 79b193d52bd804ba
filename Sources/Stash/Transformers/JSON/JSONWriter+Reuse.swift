import Foundation

/// One ``JSONWriter`` per thread, kept between encodings: its buffer, container stack and coding path
/// are allocated once, so an encoding allocates only the `Data` it returns (and the box Swift's
/// `KeyedEncodingContainer` puts each keyed container in).
///
/// A writer is taken out of its thread's slot for an encoding (an encoding started inside a value's
/// `encode(to:)` finds the slot empty and makes a writer of its own) and put back only when nothing
/// else holds it: a value that kept one of its containers keeps that writer to itself. No state is
/// shared between threads.
extension JSONWriter {
    /// A writer whose buffer grew past this is not kept (one large value should not pin its size).
    static let keptCapacity = 64 * 1024

    private static let slot: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { pointer in
            let writer: UnsafeMutableRawPointer? = pointer // optional on Linux, not on Apple platforms
            if let writer { Unmanaged<JSONWriter>.fromOpaque(writer).release() }
        }
        precondition(status == 0, "pthread_key_create failed: \(status)")
        return key
    }()

    /// The calling thread's writer, or a new one, set up for one encoding.
    static func take(options: JSONCoderOptions, userInfo: [CodingUserInfoKey: Any]) -> JSONWriter {
        guard let raw = pthread_getspecific(slot) else { return JSONWriter(options: options, userInfo: userInfo) }
        pthread_setspecific(slot, nil)
        let writer = Unmanaged<JSONWriter>.fromOpaque(raw).takeRetainedValue()
        writer.options = options
        writer.userInfo = userInfo
        return writer
    }

    /// Empties `writer` and keeps it for the thread's next encoding, unless another reference to it
    /// exists (a container the value kept), its buffer grew large, or the thread already keeps one.
    static func giveBack(_ writer: inout JSONWriter) {
        guard isKnownUniquelyReferenced(&writer), writer.capacity <= keptCapacity, pthread_getspecific(slot) == nil else { return }
        writer.reset()
        pthread_setspecific(slot, Unmanaged.passRetained(writer).toOpaque())
    }
}
