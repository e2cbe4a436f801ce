//! External merge sort (to be written).
