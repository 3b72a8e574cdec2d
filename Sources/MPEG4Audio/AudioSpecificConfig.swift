public import Bitstream

/// `AudioSpecificConfig()` (ISO/IEC 14496-3 §1.6.2.1): what a decoder needs to start an MPEG-4
/// Audio stream. An MP4's `esds` carries it (the DecoderSpecificInfo), an RTP session
/// description carries it in hex (`config=`), LATM carries it in its StreamMuxConfig, and an
/// ADTS header carries the few fields of its simplest form.
///
/// The AAC family is read whole (`GASpecificConfig`, with a program config element when the
/// channel configuration is 0, and 960-sample frames); SBR and PS (HE-AAC v1 and v2) are read in
/// both explicit forms: hierarchical (the object type 5 or 29 first) and backward compatible (a
/// sync extension after the AAC configuration). Implicit SBR cannot be seen here (only in the
/// audio data): ``outputSamplingFrequency`` is then the core rate, as a demuxer reports it
/// before decoding. Other object types are named and their rate and channels read; their
/// specific configuration is left as it is (``SpecificConfig/notRead``).
public struct AudioSpecificConfig: Hashable, Sendable {
    /// The object type of the core coder (AAC LC for HE-AAC signalled hierarchically).
    public var audioObjectType: AudioObjectType
    /// `samplingFrequencyIndex`: ``SamplingFrequency/escapeIndex`` when the rate is explicit.
    public var samplingFrequencyIndex: UInt8
    /// The core coder's rate, Hz.
    public var samplingFrequency: Int
    /// `channelConfiguration`: 0 when a program config element gives the layout.
    public var channelConfiguration: UInt8
    /// SBR and PS signalled explicitly, if they are.
    public var signalledExtension: SignalledExtension?
    /// What follows the common fields.
    public var specificConfig: SpecificConfig
    /// `epConfig`, for an error-resilient object type.
    public var epConfig: UInt8?
    /// `extensionChannelConfiguration`: ER BSAC's, after SBR or PS signalled hierarchically.
    public var extensionChannelConfiguration: UInt8?

    /// How SBR (and PS) are signalled in the configuration.
    public enum SignalledExtension: Hashable, Sendable {
        /// The object type field says SBR (5) or PS (29) first, then the rate SBR outputs, then
        /// the core's object type.
        case hierarchical(ps: Bool, extensionSamplingFrequencyIndex: UInt8, extensionSamplingFrequency: Int)
        /// After the core's configuration, the sync extension 0x2B7 with object type 5 and
        /// `sbrPresentFlag`; the rate SBR outputs when present; `ps` when the PS sync extension
        /// 0x548 follows (nil: it does not).
        case backwardCompatible(sbr: Bool, extensionSamplingFrequencyIndex: UInt8?, extensionSamplingFrequency: Int?, ps: Bool?)
    }

    /// What follows the common fields of the configuration.
    public enum SpecificConfig: Hashable, Sendable {
        /// `GASpecificConfig()`: the AAC family and TwinVQ.
        case generalAudio(GASpecificConfig)
        /// An object type whose configuration is not read here.
        case notRead
    }

    /// `GASpecificConfig()` (§4.4.1, Table 4.1).
    public struct GASpecificConfig: Hashable, Sendable {
        /// `frameLengthFlag`: 960-sample frames instead of 1024 (AAC), 480 instead of 512 (LD).
        public var frameLengthFlag: Bool
        /// `coreCoderDelay`, when `dependsOnCoreCoder`.
        public var coreCoderDelay: UInt16?
        /// `extensionFlag`.
        public var extensionFlag: Bool
        /// The channel layout, when the channel configuration is 0.
        public var programConfigElement: ProgramConfigElement?
        /// `layerNr` (AAC Scalable).
        public var layerNumber: UInt8?
        /// `numOfSubFrame` and `layer_length` (ER BSAC, with `extensionFlag`).
        public var bsac: (subFrames: UInt8, layerLength: UInt16)?
        /// The three resilience flags (section data, scale factor data, spectral data), with
        /// `extensionFlag` for ER AAC LC, LTP, Scalable and LD.
        public var resilienceFlags: (section: Bool, scaleFactor: Bool, spectral: Bool)?
        /// `extensionFlag3`, with `extensionFlag`.
        public var extensionFlag3: Bool?

        /// A plain configuration: 1024-sample frames, no core coder, no extension.
        public init(frameLengthFlag: Bool = false, programConfigElement: ProgramConfigElement? = nil) {
            self.frameLengthFlag = frameLengthFlag
            coreCoderDelay = nil
            extensionFlag = false
            self.programConfigElement = programConfigElement
        }

        /// Equal in every field.
        public static func == (a: GASpecificConfig, b: GASpecificConfig) -> Bool {
            a.frameLengthFlag == b.frameLengthFlag && a.coreCoderDelay == b.coreCoderDelay && a.extensionFlag == b.extensionFlag
                && a.programConfigElement == b.programConfigElement && a.layerNumber == b.layerNumber
                && a.bsac?.subFrames == b.bsac?.subFrames && a.bsac?.layerLength == b.bsac?.layerLength
                && a.resilienceFlags?.section == b.resilienceFlags?.section && a.resilienceFlags?.scaleFactor == b.resilienceFlags?.scaleFactor
                && a.resilienceFlags?.spectral == b.resilienceFlags?.spectral && a.extensionFlag3 == b.extensionFlag3
        }

        /// Hashes the frame length and the layout.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(frameLengthFlag)
            hasher.combine(programConfigElement)
        }
    }

    /// A configuration of the simplest form, as an ADTS header gives it: the object type, the
    /// rate (by index when the table has it) and the channel configuration, with a plain
    /// `GASpecificConfig` for the AAC family (a program config element when `channelConfiguration`
    /// is 0).
    public init(audioObjectType: AudioObjectType, samplingFrequency: Int, channelConfiguration: UInt8,
                programConfigElement: ProgramConfigElement? = nil, frameLengthFlag: Bool = false) {
        self.audioObjectType = audioObjectType
        samplingFrequencyIndex = SamplingFrequency.index(of: samplingFrequency) ?? SamplingFrequency.escapeIndex
        self.samplingFrequency = samplingFrequency
        self.channelConfiguration = channelConfiguration
        signalledExtension = nil
        specificConfig = audioObjectType.hasGASpecificConfig
            ? .generalAudio(GASpecificConfig(frameLengthFlag: frameLengthFlag, programConfigElement: channelConfiguration == 0 ? programConfigElement : nil))
            : .notRead
        epConfig = audioObjectType.isErrorResilient ? 0 : nil
    }

    // MARK: Derived

    /// Channels by `channelConfiguration` (§1.6.3.5, Table 1.19): nil for 0 and reserved values.
    public static func channelCount(configuration: UInt8) -> Int? {
        switch configuration {
        case 1...6: Int(configuration)
        case 7: 8
        case 11: 7
        case 12, 14: 8
        case 13: 24
        default: nil
        }
    }

    /// Whether SBR is signalled present.
    public var sbrPresent: Bool {
        switch signalledExtension {
        case .hierarchical: true
        case .backwardCompatible(let sbr, _, _, _): sbr
        case nil: false
        }
    }

    /// Whether PS is signalled present (HE-AAC v2).
    public var psPresent: Bool {
        switch signalledExtension {
        case .hierarchical(let ps, _, _): ps
        case .backwardCompatible(let sbr, _, _, let ps): sbr && ps == true
        case nil: false
        }
    }

    /// The rate the decoder outputs: SBR's when signalled, else the core's.
    public var outputSamplingFrequency: Int {
        switch signalledExtension {
        case .hierarchical(_, _, let rate): rate
        case .backwardCompatible(true, _, let rate?, _): rate
        default: samplingFrequency
        }
    }

    /// The channels the decoder outputs: the configuration's or the program's; two with PS.
    /// Nil when the configuration is reserved or 0 without a program config element.
    public var channelCount: Int? {
        if psPresent { return 2 }
        if channelConfiguration == 0, case .generalAudio(let ga) = specificConfig { return ga.programConfigElement?.channelCount }
        return Self.channelCount(configuration: channelConfiguration)
    }

    /// Samples per channel in one frame at the core rate: 1024, or 960 (AAC); 512 or 480 (LD,
    /// ELD); nil for a type not read here.
    public var frameLength: Int? {
        guard case .generalAudio(let ga) = specificConfig else { return nil }
        if audioObjectType == .erAACLD { return ga.frameLengthFlag ? 480 : 512 }
        return ga.frameLengthFlag ? 960 : 1024
    }

    /// The RFC 6381 codec string: `mp4a.40.` and the object type signalled first (5 or 29 for
    /// HE-AAC signalled hierarchically, as Apple's HLS authoring asks; 2 for AAC LC).
    public var codecString: String {
        if case .hierarchical(let ps, _, _) = signalledExtension { return "mp4a.40.\(ps ? 29 : 5)" }
        return "mp4a.40.\(audioObjectType.rawValue)"
    }

    // MARK: Reading

    /// Parses a whole configuration (the bytes of an esds DecoderSpecificInfo, or of an SDP's
    /// `config=`). Bytes after it are allowed (some writers pad).
    public init(bytes: [UInt8]) throws(BitstreamError) {
        var reader = BitReader(bytes.span)
        try self.init(parsing: &reader, bitLength: bytes.count * 8)
    }

    /// Parses a configuration at the reader's position; `bitLength` is its length when known
    /// (an esds gives it; LATM does not), which lets a backward-compatible SBR/PS extension be
    /// looked for after the core's configuration.
    public init(parsing reader: inout BitReader, bitLength: Int?) throws(BitstreamError) {
        let start = reader.bitPosition
        func objectType() throws(BitstreamError) -> AudioObjectType {
            let value = try reader.bits(5, "audioObjectType")
            return AudioObjectType(rawValue: value == 31 ? UInt8(32 + (try reader.bits(6, "audioObjectTypeExt"))) : UInt8(value))
        }
        func frequency(_ name: String) throws(BitstreamError) -> (index: UInt8, rate: Int) {
            let index = UInt8(try reader.bits(4, "\(name)Index"))
            if index == SamplingFrequency.escapeIndex {
                let rate = Int(try reader.bits(24, name))
                guard rate > 0 else { throw BitstreamError(.valueOutOfRange, "\(name) is 0", bitOffset: reader.bitPosition) }
                return (index, rate)
            }
            guard let rate = SamplingFrequency.rate(index: index) else {
                throw BitstreamError(.valueOutOfRange, "\(name)Index \(index) is reserved", bitOffset: reader.bitPosition)
            }
            return (index, rate)
        }
        var type = try objectType()
        let core = try frequency("samplingFrequency")
        samplingFrequencyIndex = core.index
        samplingFrequency = core.rate
        channelConfiguration = UInt8(try reader.bits(4, "channelConfiguration"))
        signalledExtension = nil
        if type == .sbr || type == .ps {
            let ext = try frequency("extensionSamplingFrequency")
            signalledExtension = .hierarchical(ps: type == .ps, extensionSamplingFrequencyIndex: ext.index, extensionSamplingFrequency: ext.rate)
            type = try objectType()
            if type == .erBSAC { extensionChannelConfiguration = UInt8(try reader.bits(4, "extensionChannelConfiguration")) }
        }
        guard type.rawValue != 0 else { throw BitstreamError(.valueOutOfRange, "audioObjectType 0 (null)", bitOffset: reader.bitPosition) }
        audioObjectType = type
        if type.hasGASpecificConfig {
            specificConfig = .generalAudio(try Self.readGASpecificConfig(&reader, objectType: type, channelConfiguration: channelConfiguration, origin: start))
        } else {
            specificConfig = .notRead
            epConfig = nil
            return  // its own configuration follows, unread: nothing after it can be found
        }
        if type.isErrorResilient {
            let ep = UInt8(try reader.bits(2, "epConfig"))
            guard ep < 2 else { throw BitstreamError(.unsupported, "epConfig \(ep): error protection is not read", bitOffset: reader.bitPosition) }
            epConfig = ep
        } else {
            epConfig = nil
        }
        if signalledExtension == nil, let bitLength, bitLength - (reader.bitPosition - start) >= 16 {
            var look = reader
            if try look.bits(11, "syncExtensionType") == 0x2B7 {
                let extensionType = try Self.objectType(&look)
                if extensionType == .sbr {
                    let sbr = try look.flag("sbrPresentFlag")
                    var index: UInt8?
                    var rate: Int?
                    var ps: Bool?
                    if sbr {
                        let indexValue = UInt8(try look.bits(4, "extensionSamplingFrequencyIndex"))
                        if indexValue == SamplingFrequency.escapeIndex {
                            rate = Int(try look.bits(24, "extensionSamplingFrequency"))
                        } else {
                            rate = SamplingFrequency.rate(index: indexValue)
                        }
                        guard let found = rate, found > 0 else {
                            throw BitstreamError(.valueOutOfRange, "extensionSamplingFrequencyIndex \(indexValue) is reserved", bitOffset: look.bitPosition)
                        }
                        index = indexValue
                        rate = found
                        if bitLength - (look.bitPosition - start) >= 12 {
                            var psLook = look
                            if try psLook.bits(11, "syncExtensionType") == 0x548 {
                                ps = try psLook.flag("psPresentFlag")
                                look = psLook
                            }
                        }
                    }
                    signalledExtension = .backwardCompatible(sbr: sbr, extensionSamplingFrequencyIndex: index, extensionSamplingFrequency: rate, ps: ps)
                    reader = look
                }
            }
        }
    }

    private static func objectType(_ reader: inout BitReader) throws(BitstreamError) -> AudioObjectType {
        let value = try reader.bits(5, "extensionAudioObjectType")
        return AudioObjectType(rawValue: value == 31 ? UInt8(32 + (try reader.bits(6, "audioObjectTypeExt"))) : UInt8(value))
    }

    private static func readGASpecificConfig(_ reader: inout BitReader, objectType: AudioObjectType, channelConfiguration: UInt8,
                                             origin: Int) throws(BitstreamError) -> GASpecificConfig {
        var ga = GASpecificConfig(frameLengthFlag: try reader.flag("frameLengthFlag"))
        if try reader.flag("dependsOnCoreCoder") { ga.coreCoderDelay = UInt16(try reader.bits(14, "coreCoderDelay")) }
        ga.extensionFlag = try reader.flag("extensionFlag")
        if channelConfiguration == 0 {
            do { ga.programConfigElement = try ProgramConfigElement(parsing: &reader, alignmentOrigin: origin) } catch { throw error.prefixed("program_config_element") }
        }
        if objectType == .aacScalable || objectType == .erAACScalable { ga.layerNumber = UInt8(try reader.bits(3, "layerNr")) }
        if ga.extensionFlag {
            if objectType == .erBSAC { ga.bsac = (UInt8(try reader.bits(5, "numOfSubFrame")), UInt16(try reader.bits(11, "layer_length"))) }
            if [17, 19, 20, 23].contains(objectType.rawValue) {
                ga.resilienceFlags = (try reader.flag("aacSectionDataResilienceFlag"), try reader.flag("aacScalefactorDataResilienceFlag"),
                                      try reader.flag("aacSpectralDataResilienceFlag"))
            }
            ga.extensionFlag3 = try reader.flag("extensionFlag3")
        }
        return ga
    }

    // MARK: Writing

    /// The configuration's bytes (zero bits to the byte boundary at the end). Throws for an
    /// object type whose specific configuration is not read here (``SpecificConfig/notRead``):
    /// copy the bytes it came in instead.
    public func serialized() throws(BitstreamError) -> [UInt8] {
        var writer = BitWriter()
        try write(to: &writer)
        if !writer.isByteAligned { writer.bits(0, 8 - writer.bitCount % 8) }
        return writer.bytes
    }

    /// Writes the configuration at the writer's position (LATM's StreamMuxConfig inlines it).
    public func write(to writer: inout BitWriter) throws(BitstreamError) {
        let origin = writer.bitCount
        func objectType(_ type: AudioObjectType) {
            if type.rawValue >= 31 {
                writer.bits(31, 5)
                writer.bits(UInt32(type.rawValue - 32), 6)
            } else {
                writer.bits(UInt32(type.rawValue), 5)
            }
        }
        func frequency(_ index: UInt8, _ rate: Int) {
            writer.bits(UInt32(index & 15), 4)
            if index == SamplingFrequency.escapeIndex { writer.bits(UInt32(rate & 0xFF_FFFF), 24) }
        }
        guard case .generalAudio(let ga) = specificConfig else {
            throw BitstreamError(.unsupported, "\(audioObjectType): its specific configuration is not written here")
        }
        if case .hierarchical(let ps, let index, let rate) = signalledExtension {
            objectType(ps ? .ps : .sbr)
            frequency(samplingFrequencyIndex, samplingFrequency)
            writer.bits(UInt32(channelConfiguration & 15), 4)
            frequency(index, rate)
            objectType(audioObjectType)
            if audioObjectType == .erBSAC { writer.bits(UInt32((extensionChannelConfiguration ?? channelConfiguration) & 15), 4) }
        } else {
            objectType(audioObjectType)
            frequency(samplingFrequencyIndex, samplingFrequency)
            writer.bits(UInt32(channelConfiguration & 15), 4)
        }
        writer.flag(ga.frameLengthFlag)
        writer.flag(ga.coreCoderDelay != nil)
        if let delay = ga.coreCoderDelay { writer.bits(UInt32(delay & 0x3FFF), 14) }
        writer.flag(ga.extensionFlag)
        if channelConfiguration == 0 {
            guard let pce = ga.programConfigElement else { throw BitstreamError(.invalidStructure, "channelConfiguration 0 without a program config element") }
            pce.write(to: &writer, alignmentOrigin: origin)
        }
        if audioObjectType == .aacScalable || audioObjectType == .erAACScalable { writer.bits(UInt32((ga.layerNumber ?? 0) & 7), 3) }
        if ga.extensionFlag {
            if audioObjectType == .erBSAC {
                writer.bits(UInt32((ga.bsac?.subFrames ?? 0) & 31), 5)
                writer.bits(UInt32((ga.bsac?.layerLength ?? 0) & 0x7FF), 11)
            }
            if [17, 19, 20, 23].contains(audioObjectType.rawValue) {
                let flags = ga.resilienceFlags ?? (false, false, false)
                writer.flag(flags.section)
                writer.flag(flags.scaleFactor)
                writer.flag(flags.spectral)
            }
            writer.flag(ga.extensionFlag3 ?? false)
        }
        if audioObjectType.isErrorResilient { writer.bits(UInt32((epConfig ?? 0) & 3), 2) }
        if case .backwardCompatible(let sbr, let index, let rate, let ps) = signalledExtension {
            writer.bits(0x2B7, 11)
            objectType(.sbr)
            writer.flag(sbr)
            if sbr {
                frequency(index ?? SamplingFrequency.index(of: rate ?? samplingFrequency) ?? SamplingFrequency.escapeIndex, rate ?? samplingFrequency)
                if let ps {
                    writer.bits(0x548, 11)
                    writer.flag(ps)
                }
            }
        }
    }
}
