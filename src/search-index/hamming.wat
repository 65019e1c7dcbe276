(module
  (import "env" "memory" (memory 1))
  ;; For each of n bit strings of `stride` bytes (a multiple of 16) from `base`, its Hamming
  ;; distance to the one at `q`, written as a u16 at out + 2i and counted in the histogram of i32
  ;; at `hist` (one count per distance).
  (func (export "hamming") (param $q i32) (param $base i32) (param $n i32) (param $stride i32) (param $out i32) (param $hist i32)
    (local $end i32) (local $j i32) (local $acc v128) (local $w v128) (local $d i32) (local $h i32)
    (local.set $end (i32.add (local.get $base) (i32.mul (local.get $n) (local.get $stride))))
    (block $done
      (loop $rows
        (br_if $done (i32.ge_u (local.get $base) (local.get $end)))
        (local.set $acc (v128.const i32x4 0 0 0 0))
        (local.set $j (i32.const 0))
        (loop $blocks
          (local.set $acc
            (i16x8.add (local.get $acc)
              (i16x8.extadd_pairwise_i8x16_u
                (i8x16.popcnt
                  (v128.xor
                    (v128.load (i32.add (local.get $q) (local.get $j)))
                    (v128.load (i32.add (local.get $base) (local.get $j))))))))
          (local.set $j (i32.add (local.get $j) (i32.const 16)))
          (br_if $blocks (i32.lt_u (local.get $j) (local.get $stride))))
        (local.set $w (i32x4.extadd_pairwise_i16x8_u (local.get $acc)))
        (local.set $d
          (i32.add
            (i32.add (i32x4.extract_lane 0 (local.get $w)) (i32x4.extract_lane 1 (local.get $w)))
            (i32.add (i32x4.extract_lane 2 (local.get $w)) (i32x4.extract_lane 3 (local.get $w)))))
        (i32.store16 (local.get $out) (local.get $d))
        (local.set $h (i32.add (local.get $hist) (i32.shl (local.get $d) (i32.const 2))))
        (i32.store (local.get $h) (i32.add (i32.load (local.get $h)) (i32.const 1)))
        (local.set $out (i32.add (local.get $out) (i32.const 2)))
        (local.set $base (i32.add (local.get $base) (local.get $stride)))
        (br $rows))))
  ;; The rows of the n distances at `out` that are at most `cut`, as i32 row numbers from `dest`;
  ;; returns how many.
  (func (export "collect") (param $out i32) (param $n i32) (param $cut i32) (param $dest i32) (result i32)
    (local $i i32) (local $found i32)
    (block $done
      (loop $rows
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (if (i32.le_u (i32.load16_u (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 1)))) (local.get $cut))
          (then
            (i32.store (i32.add (local.get $dest) (i32.shl (local.get $found) (i32.const 2))) (local.get $i))
            (local.set $found (i32.add (local.get $found) (i32.const 1)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $rows)))
    (local.get $found)))
