for s in "8192 512 2048 1 0 1" "512 256 2048 1 0 1" "512 512 2048 1 0 1" "64 512 256 1 0 1" "512 64 256 1 0 1"; do
  for r in 1 2 3 4 5; do if [ $((r%2)) = 1 ]; then echo "old $(./drv_old $s)"; echo "new $(./drv_new $s)"; else echo "new $(./drv_new $s)"; echo "old $(./drv_old $s)"; fi; done
done
