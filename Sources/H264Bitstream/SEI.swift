/// One sei_message() (ITU-T H.264 §7.3.2.3.1): its payloadType and the payload bytes.
public struct SEIMessage: Hashable, Sendable {
    /// payloadType: what the payload is (Annex D; 5 user data unregistered, 6 recovery point).
    public var payloadType: Int
    /// sei_payload() bytes (RBSP, emulation prevention removed).
    public var payload: [UInt8]

    /// A message of type `payloadType` with `payload` as its sei_payload() bytes.
    public init(payloadType: Int, payload: [UInt8]) {
        self.payloadType = payloadType
        self.payload = payload
    }

    /// The name of the payload type (Annex D), for display.
    public var typeName: String {
        switch payloadType {
        case 0: "buffering period"
        case 1: "pic timing"
        case 2: "pan-scan rect"
        case 3: "filler payload"
        case 4: "user data registered (ITU-T T.35)"
        case 5: "user data unregistered"
        case 6: "recovery point"
        case 45: "frame packing arrangement"
        case 137: "mastering display colour volume"
        case 144: "content light level"
        default: "type \(payloadType)"
        }
    }

    /// Largest payload type or size accepted (sums of 0xFF bytes are otherwise unbounded).
    public static let maximumPayloadSize = 1 << 24

    /// Splits an SEI RBSP (after the NAL header, emulation prevention removed) into messages.
    public static func messages(inRBSP rbsp: Span<UInt8>) throws(BitstreamError) -> [SEIMessage] {
        var messages: [SEIMessage] = []
        var offset = 0
        // more_rbsp_data(): stop at the trailing bits byte (0x80).
        while offset < rbsp.count && !(offset == rbsp.count - 1 && rbsp[offset] == 0x80) {
            let messageStart = offset
            var values = [0, 0]
            for index in 0..<2 {
                var value = 0
                while true {
                    guard offset < rbsp.count else {
                        throw BitstreamError(.truncated, "SEI message header cut off", byteOffset: messageStart)
                    }
                    let byte = Int(rbsp[offset])
                    offset += 1
                    value += byte
                    guard value <= maximumPayloadSize else {
                        throw BitstreamError(.valueOutOfRange, "SEI payload \(index == 0 ? "type" : "size") exceeds \(maximumPayloadSize)", byteOffset: messageStart)
                    }
                    if byte != 0xFF { break }
                }
                values[index] = value
            }
            let size = values[1]
            guard size <= rbsp.count - offset else {
                throw BitstreamError(.truncated, "SEI payload of type \(values[0]) declares \(size) bytes, \(rbsp.count - offset) remain", byteOffset: messageStart)
            }
            var payload: [UInt8] = []
            payload.reserveCapacity(size)
            for i in offset..<(offset + size) { payload.append(rbsp[i]) }
            messages.append(SEIMessage(payloadType: values[0], payload: payload))
            offset += size
        }
        return messages
    }

    /// Splits an SEI NAL unit (header included, emulation prevention present) into messages.
    public static func messages(inNALUnit nalUnit: Span<UInt8>) throws(BitstreamError) -> [SEIMessage] {
        guard nalUnit.count > 1 else { return [] }
        let rbsp = RBSP.unescape(nalUnit.extracting(1...))
        return try messages(inRBSP: rbsp.span)
    }
}

/// buffering_period() (ITU-T H.264 §D.1.2).
public struct BufferingPeriod: Hashable, Sendable {
    /// The initial CPB removal delay and offset of one CPB specification (§D.2.2).
    public struct Delay: Hashable, Sendable {
        /// initial_cpb_removal_delay, in units of a 90 kHz clock (§D.2.2).
        public var initialCpbRemovalDelay: UInt32
        /// initial_cpb_removal_delay_offset, in units of a 90 kHz clock (§D.2.2).
        public var initialCpbRemovalDelayOffset: UInt32
    }
    /// seq_parameter_set_id: the SPS whose HRD parameters the message follows (§D.2.2).
    public var seqParameterSetId: Int
    /// The delays for the NAL HRD, one per CPB; empty without nal_hrd_parameters().
    public var nalDelays: [Delay] = []
    /// The delays for the VCL HRD, one per CPB; empty without vcl_hrd_parameters().
    public var vclDelays: [Delay] = []

    /// Parses a buffering period payload; `sequenceParameterSet` looks up the SPS it names, which must be known.
    public init(payload: [UInt8], sequenceParameterSet: (Int) -> SequenceParameterSet?) throws(BitstreamError) {
        var reader = BitReader(payload.span)
        seqParameterSetId = try reader.ue("seq_parameter_set_id", max: 31)
        guard let sps = sequenceParameterSet(seqParameterSetId) else {
            throw BitstreamError(.missingParameterSet, "buffering period refers to SPS \(seqParameterSetId), which has not been received")
        }
        func delays(_ hrd: HRDParameters?, _ reader: inout BitReader) throws(BitstreamError) -> [Delay] {
            guard let hrd else { return [] }
            let length = Int(hrd.initialCpbRemovalDelayLengthMinus1) + 1
            var result: [Delay] = []
            for _ in 0...hrd.cpbCntMinus1 {
                result.append(Delay(initialCpbRemovalDelay: try reader.bits(length, "initial_cpb_removal_delay"),
                                    initialCpbRemovalDelayOffset: try reader.bits(length, "initial_cpb_removal_delay_offset")))
            }
            return result
        }
        nalDelays = try delays(sps.vuiParameters?.nalHrdParameters, &reader)
        vclDelays = try delays(sps.vuiParameters?.vclHrdParameters, &reader)
    }
}

/// pic_timing() (ITU-T H.264 §D.1.3).
public struct PicTiming: Hashable, Sendable {
    /// One clock timestamp (§D.2.3).
    public struct ClockTimestamp: Hashable, Sendable {
        /// ct_type: the source scan, 0 progressive, 1 interlaced, 2 unknown (§D.2.3).
        public var ctType: Int
        /// nuit_field_based_flag: the clock ticks count fields rather than frames (§D.2.3).
        public var nuitFieldBasedFlag: Bool
        /// counting_type: how n_frames drops or repeats counts, Table D-3 (§D.2.3).
        public var countingType: Int
        /// full_timestamp_flag: seconds, minutes and hours are all present (§D.2.3).
        public var fullTimestampFlag: Bool
        /// discontinuity_flag: the timestamp does not follow the previous one (§D.2.3).
        public var discontinuityFlag: Bool
        /// cnt_dropped_flag: counts were skipped under counting_type (§D.2.3).
        public var cntDroppedFlag: Bool
        /// n_frames: the frame (or field) count within the second (§D.2.3).
        public var nFrames: Int
        /// seconds_value, 0...59, when present.
        public var seconds: Int?
        /// minutes_value, 0...59, when present.
        public var minutes: Int?
        /// hours_value, 0...23, when present.
        public var hours: Int?
        /// time_offset: a signed offset in clock ticks; 0 when its length is 0 (§D.2.3).
        public var timeOffset: Int32 = 0
    }
    /// cpb_removal_delay, in clock ticks after the buffering period's first picture (§D.2.3); nil without HRD.
    public var cpbRemovalDelay: UInt32?
    /// dpb_output_delay: clock ticks from CPB removal to DPB output (§D.2.3); nil without HRD.
    public var dpbOutputDelay: UInt32?
    /// pic_struct (Table D-1), when pic_struct_present_flag is set.
    public var picStruct: Int?
    /// One entry per NumClockTS of the pic_struct: a timestamp, or nil where clock_timestamp_flag is 0.
    public var clockTimestamps: [ClockTimestamp?] = []

    /// NumClockTS for each pic_struct (Table D-1).
    public static let numClockTS = [1, 1, 1, 2, 2, 3, 3, 2, 3]

    /// Parses a pic timing payload; its syntax depends on the active SPS's VUI.
    public init(payload: [UInt8], activeSequenceParameterSet sps: SequenceParameterSet) throws(BitstreamError) {
        var reader = BitReader(payload.span)
        let vui = sps.vuiParameters
        if let hrd = vui?.nalHrdParameters ?? vui?.vclHrdParameters {
            cpbRemovalDelay = try reader.bits(Int(hrd.cpbRemovalDelayLengthMinus1) + 1, "cpb_removal_delay")
            dpbOutputDelay = try reader.bits(Int(hrd.dpbOutputDelayLengthMinus1) + 1, "dpb_output_delay")
        }
        guard vui?.picStructPresentFlag == true else { return }
        let picStruct = Int(try reader.bits(4, "pic_struct"))
        guard picStruct < Self.numClockTS.count else {
            throw BitstreamError(.valueOutOfRange, "pic_struct \(picStruct) is reserved", bitOffset: reader.bitPosition)
        }
        self.picStruct = picStruct
        let timeOffsetLength = Int((vui?.nalHrdParameters ?? vui?.vclHrdParameters)?.timeOffsetLength ?? 24)
        for _ in 0..<Self.numClockTS[picStruct] {
            guard try reader.flag("clock_timestamp_flag") else { clockTimestamps.append(nil); continue }
            var ts = ClockTimestamp(
                ctType: Int(try reader.bits(2, "ct_type")),
                nuitFieldBasedFlag: try reader.flag("nuit_field_based_flag"),
                countingType: Int(try reader.bits(5, "counting_type")),
                fullTimestampFlag: try reader.flag("full_timestamp_flag"),
                discontinuityFlag: try reader.flag("discontinuity_flag"),
                cntDroppedFlag: try reader.flag("cnt_dropped_flag"),
                nFrames: Int(try reader.bits(8, "n_frames")))
            if ts.fullTimestampFlag {
                ts.seconds = Int(try reader.bits(6, "seconds_value"))
                ts.minutes = Int(try reader.bits(6, "minutes_value"))
                ts.hours = Int(try reader.bits(5, "hours_value"))
            } else if try reader.flag("seconds_flag") {
                ts.seconds = Int(try reader.bits(6, "seconds_value"))
                if try reader.flag("minutes_flag") {
                    ts.minutes = Int(try reader.bits(6, "minutes_value"))
                    if try reader.flag("hours_flag") { ts.hours = Int(try reader.bits(5, "hours_value")) }
                }
            }
            if timeOffsetLength > 0 {
                let raw = try reader.bits(timeOffsetLength, "time_offset")
                // i(v): two's complement of time_offset_length bits.
                let shift = 32 - timeOffsetLength
                ts.timeOffset = Int32(bitPattern: raw << UInt32(shift)) >> Int32(shift)
            }
            clockTimestamps.append(ts)
        }
    }
}

/// user_data_unregistered() (ITU-T H.264 §D.1.7): a 16-byte UUID and free-form bytes
/// (x264 writes its version and settings here).
public struct UserDataUnregistered: Hashable, Sendable {
    /// uuid_iso_iec_11578: the 16-byte UUID naming the payload's owner (§D.2.7).
    public var uuidIsoIec11578: [UInt8]
    /// user_data_payload_byte values: the bytes after the UUID.
    public var userDataPayloadBytes: [UInt8]

    /// Parses the payload; fewer than 16 bytes is an error.
    public init(payload: [UInt8]) throws(BitstreamError) {
        guard payload.count >= 16 else {
            throw BitstreamError(.truncated, "user data unregistered needs a 16-byte UUID, payload has \(payload.count) bytes")
        }
        uuidIsoIec11578 = Array(payload[0..<16])
        userDataPayloadBytes = Array(payload[16...])
    }

    /// The payload as text when it is printable (x264's settings string), else nil.
    public var text: String? {
        let bytes = userDataPayloadBytes.last == 0 ? userDataPayloadBytes.dropLast() : userDataPayloadBytes[...]
        guard !bytes.isEmpty, bytes.allSatisfy({ $0 == 9 || $0 == 10 || (32..<127).contains($0) }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// recovery_point() (ITU-T H.264 §D.1.8).
public struct RecoveryPoint: Hashable, Sendable {
    /// recovery_frame_cnt: frames, in output order, until decoding is correct again (§D.2.8).
    public var recoveryFrameCnt: Int
    /// exact_match_flag: decoding from here matches decoding from the stream's start (§D.2.8).
    public var exactMatchFlag: Bool
    /// broken_link_flag: pictures near this point may show artefacts from an edit (§D.2.8).
    public var brokenLinkFlag: Bool
    /// changing_slice_group_idc: 0, or the slice group that grows when slice groups change (§D.2.8).
    public var changingSliceGroupIdc: Int

    /// Parses a recovery point payload.
    public init(payload: [UInt8]) throws(BitstreamError) {
        var reader = BitReader(payload.span)
        recoveryFrameCnt = try reader.ue("recovery_frame_cnt", max: 1 << 16)
        exactMatchFlag = try reader.flag("exact_match_flag")
        brokenLinkFlag = try reader.flag("broken_link_flag")
        changingSliceGroupIdc = Int(try reader.bits(2, "changing_slice_group_idc"))
    }
}
