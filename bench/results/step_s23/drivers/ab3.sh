s="8192 512 2048 1 0 1"
for r in $(seq 1 15); do if [ $((r%2)) = 1 ]; then echo "old $(./drv_old $s)"; echo "new $(./drv_new $s)"; else echo "new $(./drv_new $s)"; echo "old $(./drv_old $s)"; fi; done
