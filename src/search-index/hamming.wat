(module
  (import "env" "memory" (memory 1))
  ;; For each of n bit strings of `stride` bytes (a multiple of 16) from `base`, its Hamming
  ;; distance to the one at `q`, written as a u16 at out + 2i.
  (func (export "hamming") (param $q i32) (param $base i32) (param $n i32) (param $stride i32) (param $out i32)
    (local $end i32) (local $j i32) (local $acc v128) (local $w v128)
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
        (i32.store16 (local.get $out)
          (i32.add
            (i32.add (i32x4.extract_lane 0 (local.get $w)) (i32x4.extract_lane 1 (local.get $w)))
            (i32.add (i32x4.extract_lane 2 (local.get $w)) (i32x4.extract_lane 3 (local.get $w)))))
        (local.set $out (i32.add (local.get $out) (i32.const 2)))
        (local.set $base (i32.add (local.get $base) (local.get $stride)))
        (br $rows)))))
