public import Bitstream

/// `program_config_element()` (ISO/IEC 14496-3 §4.4.1.2, Table 4.2): the channel layout of a
/// stream whose `channelConfiguration` is 0, in an AudioSpecificConfig or as the first element
/// of an ADTS frame's raw data.
public struct ProgramConfigElement: Hashable, Sendable {
    /// One channel element the program uses: a single channel or a channel pair, by its tag.
    public struct Element: Hashable, Sendable {
        /// `*_element_is_cpe`: a channel pair (two channels) rather than one.
        public var isChannelPair: Bool
        /// `*_element_tag_select`.
        public var tag: UInt8

        /// An element of the given kind and tag.
        public init(isChannelPair: Bool, tag: UInt8) {
            self.isChannelPair = isChannelPair
            self.tag = tag
        }
    }

    /// `element_instance_tag`.
    public var elementInstanceTag: UInt8
    /// `object_type` (the AAC profile: the object type less one).
    public var objectType: UInt8
    /// `sampling_frequency_index`.
    public var samplingFrequencyIndex: UInt8
    /// The front, side and back channel elements.
    public var front: [Element], side: [Element], back: [Element]
    /// `lfe_element_tag_select` of each LFE channel.
    public var lowFrequencyEffects: [UInt8]
    /// `assoc_data_element_tag_select` of each associated data element.
    public var associatedData: [UInt8]
    /// The coupling channel elements: `cc_element_is_ind_sw`, `valid_cc_element_tag_select`.
    public var couplingChannels: [Element]
    /// `mono_mixdown_element_number`, when present.
    public var monoMixdownElement: UInt8?
    /// `stereo_mixdown_element_number`, when present.
    public var stereoMixdownElement: UInt8?
    /// `matrix_mixdown_idx` and `pseudo_surround_enable`, when present.
    public var matrixMixdown: (index: UInt8, pseudoSurround: Bool)?
    /// `comment_field_data`.
    public var comment: [UInt8]

    /// A layout of these elements (tags from 0 in order, no mixdowns, no comment).
    public init(elementInstanceTag: UInt8 = 0, objectType: UInt8 = 1, samplingFrequencyIndex: UInt8, front: [Element], side: [Element] = [],
                back: [Element] = [], lowFrequencyEffects: [UInt8] = [], associatedData: [UInt8] = [], couplingChannels: [Element] = [],
                monoMixdownElement: UInt8? = nil, stereoMixdownElement: UInt8? = nil, matrixMixdown: (index: UInt8, pseudoSurround: Bool)? = nil,
                comment: [UInt8] = []) {
        self.elementInstanceTag = elementInstanceTag
        self.objectType = objectType
        self.samplingFrequencyIndex = samplingFrequencyIndex
        self.front = front
        self.side = side
        self.back = back
        self.lowFrequencyEffects = lowFrequencyEffects
        self.associatedData = associatedData
        self.couplingChannels = couplingChannels
        self.monoMixdownElement = monoMixdownElement
        self.stereoMixdownElement = stereoMixdownElement
        self.matrixMixdown = matrixMixdown
        self.comment = comment
    }

    /// The channels the program outputs: two per channel pair, one per single channel and LFE.
    public var channelCount: Int {
        (front + side + back).reduce(0) { $0 + ($1.isChannelPair ? 2 : 1) } + lowFrequencyEffects.count
    }

    /// Parses the element at the reader's position; `byte_alignment()` counts from the bit at
    /// `alignmentOrigin` (the start of the AudioSpecificConfig, or of the raw data block).
    public init(parsing reader: inout BitReader, alignmentOrigin: Int) throws(BitstreamError) {
        elementInstanceTag = UInt8(try reader.bits(4, "element_instance_tag"))
        objectType = UInt8(try reader.bits(2, "object_type"))
        samplingFrequencyIndex = UInt8(try reader.bits(4, "sampling_frequency_index"))
        let frontCount = try reader.bits(4, "num_front_channel_elements")
        let sideCount = try reader.bits(4, "num_side_channel_elements")
        let backCount = try reader.bits(4, "num_back_channel_elements")
        let lfeCount = try reader.bits(2, "num_lfe_channel_elements")
        let assocCount = try reader.bits(3, "num_assoc_data_elements")
        let ccCount = try reader.bits(4, "num_valid_cc_elements")
        monoMixdownElement = try reader.flag("mono_mixdown_present") ? UInt8(try reader.bits(4, "mono_mixdown_element_number")) : nil
        stereoMixdownElement = try reader.flag("stereo_mixdown_present") ? UInt8(try reader.bits(4, "stereo_mixdown_element_number")) : nil
        if try reader.flag("matrix_mixdown_idx_present") {
            matrixMixdown = (UInt8(try reader.bits(2, "matrix_mixdown_idx")), try reader.flag("pseudo_surround_enable"))
        } else {
            matrixMixdown = nil
        }
        func elements(_ count: UInt32, _ name: String) throws(BitstreamError) -> [Element] {
            var result: [Element] = []
            for _ in 0..<count { result.append(Element(isChannelPair: try reader.flag("\(name)_element_is_cpe"), tag: UInt8(try reader.bits(4, "\(name)_element_tag_select")))) }
            return result
        }
        front = try elements(frontCount, "front")
        side = try elements(sideCount, "side")
        back = try elements(backCount, "back")
        var lfe: [UInt8] = []
        for _ in 0..<lfeCount { lfe.append(UInt8(try reader.bits(4, "lfe_element_tag_select"))) }
        lowFrequencyEffects = lfe
        var assoc: [UInt8] = []
        for _ in 0..<assocCount { assoc.append(UInt8(try reader.bits(4, "assoc_data_element_tag_select"))) }
        associatedData = assoc
        var coupling: [Element] = []
        for _ in 0..<ccCount { coupling.append(Element(isChannelPair: try reader.flag("cc_element_is_ind_sw"), tag: UInt8(try reader.bits(4, "valid_cc_element_tag_select")))) }
        couplingChannels = coupling
        let misalignment = (reader.bitPosition - alignmentOrigin) & 7
        if misalignment != 0 { try reader.skip(8 - misalignment) }
        let commentCount = Int(try reader.bits(8, "comment_field_bytes"))
        var text: [UInt8] = []
        for _ in 0..<commentCount { text.append(UInt8(try reader.bits(8, "comment_field_data"))) }
        comment = text
    }

    /// Writes the element; `byte_alignment()` counts from the bit at `alignmentOrigin` of the writer.
    public func write(to writer: inout BitWriter, alignmentOrigin: Int) {
        writer.bits(UInt32(elementInstanceTag & 15), 4)
        writer.bits(UInt32(objectType & 3), 2)
        writer.bits(UInt32(samplingFrequencyIndex & 15), 4)
        writer.bits(UInt32(min(front.count, 15)), 4)
        writer.bits(UInt32(min(side.count, 15)), 4)
        writer.bits(UInt32(min(back.count, 15)), 4)
        writer.bits(UInt32(min(lowFrequencyEffects.count, 3)), 2)
        writer.bits(UInt32(min(associatedData.count, 7)), 3)
        writer.bits(UInt32(min(couplingChannels.count, 15)), 4)
        writer.flag(monoMixdownElement != nil)
        if let monoMixdownElement { writer.bits(UInt32(monoMixdownElement & 15), 4) }
        writer.flag(stereoMixdownElement != nil)
        if let stereoMixdownElement { writer.bits(UInt32(stereoMixdownElement & 15), 4) }
        writer.flag(matrixMixdown != nil)
        if let matrixMixdown {
            writer.bits(UInt32(matrixMixdown.index & 3), 2)
            writer.flag(matrixMixdown.pseudoSurround)
        }
        for element in front.prefix(15) + side.prefix(15) + back.prefix(15) {
            writer.flag(element.isChannelPair)
            writer.bits(UInt32(element.tag & 15), 4)
        }
        for tag in lowFrequencyEffects.prefix(3) { writer.bits(UInt32(tag & 15), 4) }
        for tag in associatedData.prefix(7) { writer.bits(UInt32(tag & 15), 4) }
        for element in couplingChannels.prefix(15) {
            writer.flag(element.isChannelPair)
            writer.bits(UInt32(element.tag & 15), 4)
        }
        let misalignment = (writer.bitCount - alignmentOrigin) & 7
        if misalignment != 0 { writer.bits(0, 8 - misalignment) }
        writer.bits(UInt32(min(comment.count, 255)), 8)
        for byte in comment.prefix(255) { writer.bits(UInt32(byte), 8) }
    }

    /// Equal when every field is.
    public static func == (a: ProgramConfigElement, b: ProgramConfigElement) -> Bool {
        a.elementInstanceTag == b.elementInstanceTag && a.objectType == b.objectType && a.samplingFrequencyIndex == b.samplingFrequencyIndex
            && a.front == b.front && a.side == b.side && a.back == b.back && a.lowFrequencyEffects == b.lowFrequencyEffects
            && a.associatedData == b.associatedData && a.couplingChannels == b.couplingChannels && a.monoMixdownElement == b.monoMixdownElement
            && a.stereoMixdownElement == b.stereoMixdownElement && a.matrixMixdown?.index == b.matrixMixdown?.index
            && a.matrixMixdown?.pseudoSurround == b.matrixMixdown?.pseudoSurround && a.comment == b.comment
    }

    /// Hashes the layout.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(front)
        hasher.combine(side)
        hasher.combine(back)
        hasher.combine(lowFrequencyEffects)
    }
}
