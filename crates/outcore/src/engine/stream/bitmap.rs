//! The indexed bitmap of Redio (paper §3.2, "Indexed Bitmap"): one bit per vertex, divided into
//! partitions of `p` bits, plus an index with one bit per partition telling whether it holds
//! any set bit. Memory is `(v + v/p) / 8` bytes.
//!
//! Why: the stream engine scans the frontier at the start of every iteration to find the
//! active edges. For BFS- and WCC-like programs most iterations have only a handful of active
//! vertices, and scanning |V| bits would cost more than the I/O it saves. The index lets the
//! scan (and the clearing between iterations) skip empty partitions wholesale; when nearly
//! every vertex is active the index does not help, but then the iteration reads most edges
//! and the scan is cheap by comparison.
//!
//! The frontier for the next iteration is built while applying, in parallel: the bitmap hands
//! out disjoint [`BitmapBlockMut`] views, each covering the 64 partitions of one index word, so
//! that threads set bits and index bits without atomics or locks.

use rayon::prelude::*;

/// Default partition size `p` in bits (8 words).
pub const DEFAULT_PARTITION_BITS: usize = 512;

/// A bitmap with an index of non-empty partitions.
#[derive(Debug, Clone)]
pub struct IndexedBitmap {
    len: usize,
    /// Words per partition (p / 64).
    partition_words: usize,
    words: Vec<u64>,
    /// Bit `i` set when partition `i` may hold a set bit (exact after every operation here).
    index: Vec<u64>,
}

impl IndexedBitmap {
    /// An all-clear bitmap of `len` bits with partitions of `partition_bits` (a positive
    /// multiple of 64).
    pub fn new(len: usize, partition_bits: usize) -> IndexedBitmap {
        assert!(
            partition_bits >= 64 && partition_bits.is_multiple_of(64),
            "partition size must be a multiple of 64 bits"
        );
        let partition_words = partition_bits / 64;
        let words = len.div_ceil(64);
        let partitions = words.div_ceil(partition_words);
        IndexedBitmap { len, partition_words, words: vec![0; words], index: vec![0; partitions.div_ceil(64)] }
    }

    /// Memory the bitmap takes for `len` bits, in bytes.
    pub fn bytes_for(len: usize, partition_bits: usize) -> u64 {
        let words = len.div_ceil(64);
        let partitions = words.div_ceil(partition_bits / 64);
        (words + partitions.div_ceil(64)) as u64 * 8
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bits covered by one [`BitmapBlockMut`] (64 partitions).
    pub fn block_bits(&self) -> usize {
        self.partition_words * 64 * 64
    }

    #[inline]
    pub fn get(&self, i: usize) -> bool {
        debug_assert!(i < self.len);
        self.words[i / 64] >> (i % 64) & 1 == 1
    }

    /// Sets bit `i` (< `len`; callers check, a debug build asserts) and its partition's
    /// index bit.
    #[inline]
    pub fn set(&mut self, i: usize) {
        debug_assert!(i < self.len, "bit {i} out of range for {} bits", self.len);
        self.words[i / 64] |= 1 << (i % 64);
        let partition = i / 64 / self.partition_words;
        self.index[partition / 64] |= 1 << (partition % 64);
    }

    /// Clears every bit, visiting only partitions the index marks.
    pub fn clear(&mut self) {
        let pw = self.partition_words;
        for (iw, index_word) in self.index.iter_mut().enumerate() {
            let mut marked = *index_word;
            while marked != 0 {
                let partition = iw * 64 + marked.trailing_zeros() as usize;
                marked &= marked - 1;
                let start = partition * pw;
                let end = (start + pw).min(self.words.len());
                self.words[start..end].fill(0);
            }
            *index_word = 0;
        }
    }

    /// Lets `update` change the bits as words (bit `i` is bit `i % 64` of word `i / 64`; bits
    /// at or beyond `len` must stay clear), then rebuilds the index: for writers that split the
    /// words between threads (a pull iteration, which sets most bits anyway).
    pub fn update_words<R>(&mut self, update: impl FnOnce(&mut [u64]) -> R) -> R {
        let result = update(&mut self.words);
        let pw = self.partition_words;
        self.index.fill(0);
        for (partition, words) in self.words.chunks(pw).enumerate() {
            if words.iter().any(|&w| w != 0) {
                self.index[partition / 64] |= 1 << (partition % 64);
            }
        }
        result
    }

    /// Number of set bits (skipping empty partitions).
    pub fn count_ones(&self) -> u64 {
        let mut count = 0u64;
        self.for_each_marked_partition(|words| count += words.iter().map(|w| w.count_ones() as u64).sum::<u64>());
        count
    }

    /// True when no bit is set (looks at the index only).
    pub fn none(&self) -> bool {
        self.index.iter().all(|&w| w == 0)
    }

    fn for_each_marked_partition(&self, mut visit: impl FnMut(&[u64])) {
        let pw = self.partition_words;
        for (iw, &index_word) in self.index.iter().enumerate() {
            let mut marked = index_word;
            while marked != 0 {
                let partition = iw * 64 + marked.trailing_zeros() as usize;
                marked &= marked - 1;
                let start = partition * pw;
                visit(&self.words[start..(start + pw).min(self.words.len())]);
            }
        }
    }

    /// The first set bit at or after `from`, skipping empty partitions through the index.
    pub fn next_one(&self, from: usize) -> Option<usize> {
        if from >= self.len {
            return None;
        }
        let pw = self.partition_words;
        let mut word = from / 64;
        // Bits of the first word below `from` are masked off.
        let mut bits = self.words[word] & (!0u64 << (from % 64));
        loop {
            if bits != 0 {
                let i = word * 64 + bits.trailing_zeros() as usize;
                return (i < self.len).then_some(i);
            }
            word += 1;
            if word >= self.words.len() {
                return None;
            }
            if word.is_multiple_of(pw) {
                // Entering a new partition: jump to the next marked one.
                let partition = self.next_marked_partition(word / pw)?;
                word = partition * pw;
            }
            bits = self.words[word];
        }
    }

    /// The first partition at or after `from` whose index bit is set.
    fn next_marked_partition(&self, from: usize) -> Option<usize> {
        let mut iw = from / 64;
        if iw >= self.index.len() {
            return None;
        }
        let mut marked = self.index[iw] & (!0u64 << (from % 64));
        loop {
            if marked != 0 {
                return Some(iw * 64 + marked.trailing_zeros() as usize);
            }
            iw += 1;
            if iw >= self.index.len() {
                return None;
            }
            marked = self.index[iw];
        }
    }

    /// Set bits in ascending order.
    pub fn iter_ones(&self) -> impl Iterator<Item = usize> + '_ {
        let mut next = 0usize;
        std::iter::from_fn(move || {
            let i = self.next_one(next)?;
            next = i + 1;
            Some(i)
        })
    }

    /// Disjoint mutable views of 64 partitions each ([`block_bits`](Self::block_bits) bits),
    /// in order, for building the bitmap from several threads.
    pub fn par_blocks_mut(&mut self) -> impl IndexedParallelIterator<Item = BitmapBlockMut<'_>> {
        let pw = self.partition_words;
        let len = self.len;
        let block_bits = self.block_bits();
        self.words.par_chunks_mut(pw * 64).zip(self.index.par_iter_mut()).enumerate().map(move |(b, (words, index))| {
            let first = b * block_bits;
            BitmapBlockMut { first, len: (len - first).min(block_bits), partition_words: pw, words, index }
        })
    }
}

/// A mutable view of one index word's 64 partitions of an [`IndexedBitmap`]; bit positions
/// are relative to [`first`](Self::first).
#[derive(Debug)]
pub struct BitmapBlockMut<'a> {
    first: usize,
    len: usize,
    partition_words: usize,
    words: &'a mut [u64],
    index: &'a mut u64,
}

impl BitmapBlockMut<'_> {
    /// Global position of the block's first bit.
    pub fn first(&self) -> usize {
        self.first
    }

    /// Bits in this block.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn get(&self, local: usize) -> bool {
        self.words[local / 64] >> (local % 64) & 1 == 1
    }

    #[inline]
    pub fn set(&mut self, local: usize) {
        debug_assert!(local < self.len);
        self.words[local / 64] |= 1 << (local % 64);
        *self.index |= 1 << (local / 64 / self.partition_words);
    }

    /// Calls `visit` with each set bit (local position), skipping empty partitions.
    pub fn for_each_one(&self, mut visit: impl FnMut(usize)) {
        let pw = self.partition_words;
        let mut marked = *self.index;
        while marked != 0 {
            let partition = marked.trailing_zeros() as usize;
            marked &= marked - 1;
            let start = partition * pw;
            for w in start..(start + pw).min(self.words.len()) {
                let mut bits = self.words[w];
                while bits != 0 {
                    visit(w * 64 + bits.trailing_zeros() as usize);
                    bits &= bits - 1;
                }
            }
        }
    }

    /// Clears the block, visiting only marked partitions.
    pub fn clear(&mut self) {
        let pw = self.partition_words;
        let mut marked = *self.index;
        while marked != 0 {
            let partition = marked.trailing_zeros() as usize;
            marked &= marked - 1;
            let start = partition * pw;
            let end = (start + pw).min(self.words.len());
            self.words[start..end].fill(0);
        }
        *self.index = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn from_bools(bools: &[bool], p: usize) -> IndexedBitmap {
        let mut b = IndexedBitmap::new(bools.len(), p);
        for (i, &on) in bools.iter().enumerate() {
            if on {
                b.set(i);
            }
        }
        b
    }

    #[test]
    fn index_marks_exactly_the_non_empty_partitions() {
        let mut b = IndexedBitmap::new(10_000, 128);
        b.set(0);
        b.set(129);
        b.set(9_999);
        assert_eq!(b.index[0], 0b11);
        assert_eq!(b.index.iter().map(|w| w.count_ones()).sum::<u32>(), 3);
        assert_eq!(b.iter_ones().collect::<Vec<_>>(), vec![0, 129, 9_999]);
        b.clear();
        assert!(b.none());
        assert_eq!(b.count_ones(), 0);
        assert!(b.words.iter().all(|&w| w == 0));
    }

    proptest! {
        #[test]
        fn behaves_like_a_vector_of_booleans(
            bools in proptest::collection::vec(proptest::bool::weighted(0.05), 0..5000),
            p_words in 1usize..4,
            probes in proptest::collection::vec(0usize..5100, 0..20),
        ) {
            let p = p_words * 64;
            let b = from_bools(&bools, p);
            let expected: Vec<usize> = (0..bools.len()).filter(|&i| bools[i]).collect();
            prop_assert_eq!(b.iter_ones().collect::<Vec<_>>(), expected.clone());
            prop_assert_eq!(b.count_ones(), expected.len() as u64);
            prop_assert_eq!(b.none(), expected.is_empty());
            for (i, &on) in bools.iter().enumerate() {
                prop_assert_eq!(b.get(i), on);
            }
            for &from in &probes {
                let want = expected.iter().copied().find(|&i| i >= from);
                prop_assert_eq!(b.next_one(from), want);
            }
        }

        #[test]
        fn parallel_blocks_build_the_same_bitmap(
            bools in proptest::collection::vec(proptest::bool::weighted(0.1), 0..20_000),
            clear_some in proptest::bool::ANY,
        ) {
            let p = 64;
            let mut built = IndexedBitmap::new(bools.len(), p);
            let block_bits = built.block_bits();
            built.par_blocks_mut().for_each(|mut block| {
                for local in 0..block.len() {
                    if bools[block.first() + local] {
                        block.set(local);
                    }
                }
            });
            let expected = from_bools(&bools, p);
            prop_assert_eq!(&built.words, &expected.words);
            prop_assert_eq!(&built.index, &expected.index);
            // Visiting set bits through blocks, and clearing every other block.
            let mut seen = Vec::new();
            let mut blocks: Vec<_> = built.par_blocks_mut().collect();
            for (b, block) in blocks.iter_mut().enumerate() {
                block.for_each_one(|local| seen.push(block.first() + local));
                if clear_some && b % 2 == 0 {
                    block.clear();
                }
            }
            drop(blocks);
            let want: Vec<usize> = (0..bools.len()).filter(|&i| bools[i]).collect();
            prop_assert_eq!(seen, want.clone());
            let left: Vec<usize> = want
                .into_iter()
                .filter(|&i| !(clear_some && (i / block_bits).is_multiple_of(2)))
                .collect();
            prop_assert_eq!(built.iter_ones().collect::<Vec<_>>(), left);
        }
    }
}
